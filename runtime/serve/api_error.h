// runtime/serve/api_error.h — an OpenAI-shaped error: HTTP status, type, message naming the field, value and limit, and the param.
#pragma once

#include <string>

namespace dsv41::serve {

struct ApiError {
  int status = 400;
  std::string type = "invalid_request_error";
  std::string message;
  std::string param;  // the request field at fault, or empty
  int retry_after_s = 0;  // 503: the Retry-After header, when set
};

inline ApiError invalid(std::string param, std::string message) { return {400, "invalid_request_error", std::move(message), std::move(param), 0}; }
inline ApiError unavailable(std::string message, int retry_after_s) {
  return {503, "server_unavailable", std::move(message), "", retry_after_s};
}

}  // namespace dsv41::serve
