-- release.lua deletes the lock keys that still hold the caller's owner token,
-- and tells waiters on each freed key that it is free.
--
-- KEYS[i] is a lock key. ARGV is the argument list the three scripts share,
-- so that a lock builds it once: ARGV[1] the owner token, ARGV[2] the lease
-- (not needed here), ARGV[i + 2] the release channel of KEYS[i].
--
-- Returns how many keys were released. A key that holds another token (its
-- lease ran out and someone else took it) is left alone: comparing and
-- deleting in one script is what makes that safe.

local released = 0
for i = 1, #KEYS do
  if redis.call("GET", KEYS[i]) == ARGV[1] then
    redis.call("DEL", KEYS[i])
    redis.call("PUBLISH", ARGV[i + 2], "released")
    released = released + 1
  end
end
return released
