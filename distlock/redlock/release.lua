-- release.lua deletes the lock keys on one node that still hold the
-- caller's owner token, and leaves every other key alone; it tells the
-- waiters of each key it deleted that it is free, if it has any.
--
-- KEYS are lock keys, ARGV[1] the owner token.
--
-- Returns how many keys were deleted.
--
-- A key that somebody failed to take holds the token followed by "+", the
-- mark acquire.lua leaves (see there): that release is published, on a
-- channel named like the key, which is what waiters subscribe to. A key
-- nobody waited for is released without a PUBLISH: an uncontended release
-- runs GET and DEL here, nothing more.

local released = 0
for i = 1, #KEYS do
  local value = redis.call("GET", KEYS[i])
  if value == ARGV[1] then
    redis.call("DEL", KEYS[i])
    released = released + 1
  elseif value == ARGV[1] .. "+" then
    redis.call("DEL", KEYS[i])
    redis.call("PUBLISH", KEYS[i], "released")
    released = released + 1
  end
end
return released
