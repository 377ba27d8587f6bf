-- raiseseen.lua lifts fence counters of one node to fences that were seen
-- written, so that the next token of each key, from a quorum that takes in
-- this node, is newer than them (see Locker.RaiseFences).
--
-- KEYS are fence counters; ARGV[i] is the fence seen for KEYS[i], as a
-- string of digits. A counter below its fence, or missing, is set to it
-- (without expiry, as every Redlock counter); one at or above it is left
-- alone, so a raise never lowers a counter and tokens only grow.
-- Returns how many counters were raised.

local raised = 0
for i = 1, #KEYS do
  local counter = tonumber(redis.call("GET", KEYS[i]) or "0")
  if counter < tonumber(ARGV[i]) then
    redis.call("SET", KEYS[i], ARGV[i]) -- the digits as sent
    raised = raised + 1
  end
end
return raised
