// common/status.h — errors as values (Status, Result<T>) and the check macro for programmer bugs.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <variant>

#include <fmt/format.h>

namespace dsv41 {

// A failed Status carries one message naming the input, the value and the limit.
class [[nodiscard]] Status {
 public:
  Status() = default;
  static Status ok() { return Status(); }
  static Status error(std::string message) {
    Status s;
    s.failed_ = true;
    s.message_ = std::move(message);
    return s;
  }
  template <class... Args>
  static Status errorf(fmt::format_string<Args...> format, Args&&... args) {
    return error(fmt::format(format, std::forward<Args>(args)...));
  }
  bool is_ok() const { return !failed_; }
  const std::string& message() const { return message_; }
  // Prefixes context (a file or tensor name) to a failure; ok stays ok.
  Status with_context(const std::string& context) const {
    return failed_ ? error(context + ": " + message_) : *this;
  }

 private:
  bool failed_ = false;
  std::string message_;
};

template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : state_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status status) : state_(std::move(status)) {  // NOLINT
    if (std::get<Status>(state_).is_ok()) {
      std::fprintf(stderr, "dsv41: internal error: Result built from an ok Status\n");
      std::abort();
    }
  }
  bool is_ok() const { return std::holds_alternative<T>(state_); }
  const Status& status() const {
    static const Status ok_status;
    return is_ok() ? ok_status : std::get<Status>(state_);
  }
  T& value() & { return std::get<T>(state_); }
  const T& value() const& { return std::get<T>(state_); }
  T&& value() && { return std::get<T>(std::move(state_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status> state_;
};

}  // namespace dsv41

// A broken invariant is a bug in dsv41, not bad input: stop loudly.
#define DSV41_CHECK(cond)                                                                  \
  do {                                                                                     \
    if (!(cond)) {                                                                         \
      std::fprintf(stderr, "dsv41: internal check failed at %s:%d: %s\n", __FILE__, __LINE__, \
                   #cond);                                                                 \
      std::abort();                                                                        \
    }                                                                                      \
  } while (0)

#define DSV41_CONCAT_INNER(a, b) a##b
#define DSV41_CONCAT(a, b) DSV41_CONCAT_INNER(a, b)

// Returns a failed Status (or Result) from the enclosing function.
#define DSV41_TRY(expr)                                    \
  do {                                                     \
    ::dsv41::Status dsv41_try_status = (expr);             \
    if (!dsv41_try_status.is_ok()) return dsv41_try_status; \
  } while (0)

#define DSV41_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                \
  if (!tmp.is_ok()) return tmp.status();            \
  lhs = std::move(tmp).value()

#define DSV41_ASSIGN_OR_RETURN(lhs, expr) \
  DSV41_ASSIGN_OR_RETURN_IMPL(DSV41_CONCAT(dsv41_result_, __LINE__), lhs, expr)
