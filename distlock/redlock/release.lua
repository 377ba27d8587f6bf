-- release.lua deletes the lock keys on one node that still hold the
-- caller's owner token, and leaves every other key alone; it tells the
-- waiters on each key it deleted that it is free.
--
-- KEYS are lock keys, ARGV[1] the owner token, ARGV[i + 1] the release
-- channel of KEYS[i].
--
-- Returns how many keys were deleted.

local released = 0
for i = 1, #KEYS do
  if redis.call("GET", KEYS[i]) == ARGV[1] then
    redis.call("DEL", KEYS[i])
    redis.call("PUBLISH", ARGV[i + 1], "released")
    released = released + 1
  end
end
return released
