-- raise.lua lifts the fence counters of one node to the fencing tokens a
-- lock was given, so that any later holder that goes through this node
-- gets a higher token. It does so only while the node still holds the
-- lock: a counter raised for a lock that is gone would prove nothing.
--
-- KEYS come in pairs as in acquire.lua: (lock key, fence counter).
-- ARGV[1] is the owner token, ARGV[1 + n] the fencing token of the n-th key.
--
-- Returns 1 when every counter is at least its token now, 0 when some lock
-- key no longer holds the owner token (then nothing was written). A lock
-- key that holds the token followed by "+", the mark of a waiter (see
-- acquire.lua), still holds it.

for i = 1, #KEYS, 2 do
  local value = redis.call("GET", KEYS[i])
  if value ~= ARGV[1] and value ~= ARGV[1] .. "+" then
    return 0
  end
end
for i = 1, #KEYS, 2 do
  local token = ARGV[1 + (i + 1) / 2]
  local counter = tonumber(redis.call("GET", KEYS[i + 1]) or "0")
  if counter < tonumber(token) then
    redis.call("SET", KEYS[i + 1], token) -- the digits as sent
  end
end
return 1
