-- refresh.lua extends the lease of every lock key on one server, but only
-- if every one of them still holds the caller's owner token. The Redis
-- backend and Redlock (on each node) both run it.
--
-- KEYS are lock keys, ARGV[1] the owner token, ARGV[2] the lease in
-- milliseconds.
--
-- Returns 1 when every lease was extended, 0 when some key is gone or held
-- by another owner (then nothing was extended).

for i = 1, #KEYS do
  if redis.call("GET", KEYS[i]) ~= ARGV[1] then
    return 0
  end
end
for i = 1, #KEYS do
  redis.call("PEXPIRE", KEYS[i], ARGV[2])
end
return 1
