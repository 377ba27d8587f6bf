-- refresh.lua extends the lease of every lock key on one server, but only
-- if every one of them still holds the caller's owner token. The Redis
-- backend and Redlock (on each node) both run it.
--
-- KEYS are lock keys, ARGV[1] the owner token, ARGV[2] the lease in
-- milliseconds.
--
-- A key may hold the token followed by "+": the mark of a waiter (see the
-- acquire.lua of distlock and of Redlock). That is still the caller's
-- lock.
--
-- Returns 1 when every lease was extended, 0 when some key is gone or held
-- by another owner (then nothing was extended).

for i = 1, #KEYS do
  local value = redis.call("GET", KEYS[i])
  if value ~= ARGV[1] and value ~= ARGV[1] .. "+" then
    return 0
  end
end
for i = 1, #KEYS do
  redis.call("PEXPIRE", KEYS[i], ARGV[2])
end
return 1
