-- wrk script: one request shape from the environment, a JSON summary on stdout.
wrk.method = os.getenv("WRK_METHOD") or "GET"
local body = os.getenv("WRK_BODY")
if body and body ~= "" then
  wrk.body = body
  wrk.headers["Content-Type"] = "application/json"
end
local token = os.getenv("WRK_TOKEN")
if token and token ~= "" then
  wrk.headers["Authorization"] = "Bearer " .. token
end

-- WRK_TOKENS (comma-separated): each request takes the next, round robin (many users).
local tokens = {}
for t in string.gmatch(os.getenv("WRK_TOKENS") or "", "[^,]+") do
  tokens[#tokens + 1] = t
end
local next_token = 0
if #tokens > 0 then
  request = function()
    next_token = next_token % #tokens + 1
    wrk.headers["Authorization"] = "Bearer " .. tokens[next_token]
    return wrk.format()
  end
end

done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    '{"requests":%d,"duration_us":%d,"socket_errors":%d,"non_2xx":%d,' ..
    '"p50_us":%d,"p99_us":%d,"mean_us":%.1f}\n',
    summary.requests, summary.duration, e.connect + e.read + e.write + e.timeout,
    e.status, latency:percentile(50), latency:percentile(99), latency.mean))
end
