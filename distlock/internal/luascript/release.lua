-- release.lua deletes the lock keys on one server that still hold the
-- caller's owner token, and tells the waiters of each freed key that it is
-- free, if it has any. The Redis backend and Redlock (on each node) both
-- run it.
--
-- KEYS are lock keys, ARGV[1] the owner token.
--
-- Returns how many keys were released. A key that holds another token (its
-- lease ran out and someone else took it) is left alone: comparing and
-- deleting in one script is what makes that safe.
--
-- A key that somebody failed to take holds the token followed by "+", the
-- mark of a waiter (see the acquire.lua of distlock and of Redlock): that
-- release is published, on a channel named like the key, which is what
-- waiters subscribe to. A key nobody waited for is released without a
-- PUBLISH: an uncontended cycle runs GET and DEL here, nothing more.

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
