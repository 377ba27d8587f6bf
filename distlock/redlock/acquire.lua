-- acquire.lua takes every key of one lock on one Redlock node, or none of
-- them, in one atomic step.
--
-- KEYS come in pairs, one pair per key the caller locks:
--   KEYS[i]     the lock key, whose value is the holder's owner token
--   KEYS[i + 1] the fence counter of that key, which never expires: the
--               clock it falls back to is each client's, and raise.lua lifts
--               it to tokens from other clients' clocks, so a counter may
--               stand above the next client's clock, and the token that
--               clock would give after an expiry could be older than one
--               already written (distlock's single-server counter, of one
--               server's clock, does expire)
-- ARGV[1] is the new holder's owner token, ARGV[2] the lease in
-- milliseconds, ARGV[3] is "1" when fencing tokens are wanted, ARGV[4] the
-- client's clock in microseconds, the same for every node of the attempt.
--
-- With fencing, the counter of a key becomes itself plus one, or ARGV[4]
-- when it has fallen more than a second behind that clock (written as
-- digits: Lua would write a number this large in exponent form): see
-- "Fencing, as far as Redlock allows" in doc.go. The
-- clock is the client's, not the node's, so that nodes whose counters
-- agreed before agree after, and no raise round is needed.
--
-- Returns the counter alone when the one key of the call was free and is
-- now taken, or {1, counter_1, counter_2, ...} for several keys (the
-- counters are 0 without fencing); or {0, pttl} when a key is held, pttl
-- being what is left of its lease in milliseconds (-1: none). One key is
-- the common case and takes the short way: no table built for the reply.
--
-- A held key is marked as waited for: "+" is written after the holder's
-- token (at the length of ours, which is the length of every owner token),
-- and release.lua publishes the release of a marked key only. The mark is
-- written in the same step as the look that found the key held, so a
-- waiter that looks again once it is subscribed leaves the mark on the
-- holder it waits for on this node, whoever that is by then (see Waiting
-- in doc.go). Writing it again changes nothing.
--
-- Each key is taken with SET NX PX, which takes a free key and leaves a
-- held one alone. When a key turns out to be held, the keys this call took
-- before it are deleted again; a script runs with nothing else in
-- between, so nobody ever sees them taken: all or nothing. For one free
-- key this is SET, and with fencing INCR.

for i = 1, #KEYS, 2 do
  if not redis.call("SET", KEYS[i], ARGV[1], "NX", "PX", ARGV[2]) then
    for j = 1, i - 2, 2 do
      redis.call("DEL", KEYS[j])
    end
    redis.call("SETRANGE", KEYS[i], #ARGV[1], "+")
    return {0, redis.call("PTTL", KEYS[i])}
  end
end

local function fence(counter)
  if ARGV[3] ~= "1" then
    return 0
  end
  local token = redis.call("INCR", counter)
  local now = tonumber(ARGV[4])
  if token < now - 1000000 then
    token = now
    redis.call("SET", counter, string.format("%.0f", token))
  end
  return token
end

if #KEYS == 2 then
  return fence(KEYS[2])
end
local reply = {1}
for i = 2, #KEYS, 2 do
  reply[#reply + 1] = fence(KEYS[i])
end
return reply
