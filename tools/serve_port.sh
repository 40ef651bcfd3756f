# tools/serve_port.sh — sourced: wait_for_serve_port PID LOG [TENTHS] prints the port `dsv41-rt serve` (PID) announced in LOG.
#
# Polls LOG for "listening on http://127.0.0.1:PORT" every 0.1 s, TENTHS times at most (default 600).
# Returns 1 (after printing LOG to stderr) when the server exits first or never announces a port.
wait_for_serve_port() {
  local pid=$1 log=$2 tries=${3:-600} port=
  for _ in $(seq 1 "$tries"); do
    port=$(sed -n 's/.*listening on http:\/\/127.0.0.1:\([0-9]*\).*/\1/p' "$log")
    [[ -n "$port" ]] && { echo "$port"; return 0; }
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  echo "the server did not start:" >&2
  cat "$log" >&2
  return 1
}
