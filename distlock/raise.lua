-- raise.lua lifts fence counters to fences that were seen written, so that
-- the next token of each key is newer than them (see RaiseFences).
--
-- KEYS are fence counters; ARGV[i] is the fence seen for KEYS[i], as a
-- string of digits, and ARGV[#KEYS + 1] how long in milliseconds a counter
-- outlives its last token, as in acquire.lua.
--
-- A counter below its fence, or missing, is set to it; one at or above it
-- is left alone, so a raise never lowers a counter and tokens only grow.
-- Returns how many counters were raised.

local ttl = ARGV[#KEYS + 1]
local raised = 0
for i = 1, #KEYS do
  local counter = tonumber(redis.call("GET", KEYS[i]) or "0")
  if counter < tonumber(ARGV[i]) then
    redis.call("SET", KEYS[i], ARGV[i], "PX", ttl) -- the digits as sent
    raised = raised + 1
  end
end
return raised
