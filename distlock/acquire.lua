-- acquire.lua takes every key of one lock, or none of them, in one atomic step.
--
-- KEYS hold the n lock keys, then their n fence counters:
--   KEYS[i]     the i-th lock key, whose value is the holder's owner token
--   KEYS[n + i] the fence counter of that key
-- ARGV[1] is the new holder's owner token, ARGV[2] the lease in milliseconds,
-- ARGV[3] how long in milliseconds a fence counter outlives its last token.
--
-- Returns the fencing token when one key was free and is now taken, or
-- {fence_1, ..., fence_n} for n keys, one token per key; or {0, i, pttl}
-- when the i-th key is held, pttl being what is left of its lease in
-- milliseconds (-1: none). A fencing token is never 0.
--
-- Each key is taken with SET NX PX, which takes a free key and leaves a held
-- one alone. When the i-th key turns out to be held, the keys this call took
-- before it are deleted again. A script runs with nothing else in between,
-- so nobody ever sees those keys taken: all or nothing. In the common case,
-- one free key, this is four commands: SET, TIME, INCR and PEXPIRE.
--
-- A held key is marked as waited for: "+" is written after the holder's
-- token (at the length of ours, which is the length of every owner token),
-- and release.lua publishes the release of a marked key only. The mark is
-- written in the same step as the look that found the key held, so a
-- waiter that looks again once it is subscribed leaves the mark on the
-- holder it waits for, whoever that is by then (see "Waiting by push" in
-- doc.go). Writing it again changes nothing.
--
-- A fencing token is the key's counter plus one, or the server's clock in
-- microseconds when the counter has fallen more than a second behind it,
-- and becomes the new counter. The counter makes tokens increase while
-- Redis keeps its data; the clock makes them increase across a restart
-- that lost the counter, or a failover to a replica that never saw it: a
-- token is never ahead of the clock at its issue, and one issued later
-- carries a later time (see "Fencing tokens" in doc.go). Allowing the
-- counter to lag the clock by a second keeps the common case to TIME,
-- INCR and PEXPIRE. A token set from the clock is written as a string of digits: Lua
-- would write a number this large in exponent form.
--
-- So a counter is safe to expire: the next token after it is gone comes
-- from the clock, as after a restart, and is above every token the counter
-- gave, since none of those was ahead of the clock when it was issued. Each
-- token sets the counter's expiry again (ARGV[3]), so the counters of seats
-- nobody locks any more go away instead of piling up for good. The expiry
-- is also how far the server's clock may step back without a token going
-- stale: keep it long (RedisOptions.FenceTTL). A clock that steps back
-- further is repaired by raise.lua, once the fenced resource has refused
-- a token and said which fence it has seen (Redis.RaiseFences).
--
-- One key is the common case and takes the short way: a bare number as the
-- reply, no table built.

local n = #KEYS / 2

for i = 1, n do
  if not redis.call("SET", KEYS[i], ARGV[1], "NX", "PX", ARGV[2]) then
    for j = 1, i - 1 do
      redis.call("DEL", KEYS[j])
    end
    redis.call("SETRANGE", KEYS[i], #ARGV[1], "+")
    return {0, i, redis.call("PTTL", KEYS[i])}
  end
end

local now = redis.call("TIME")
now = now[1] * 1000000 + now[2] -- seconds and microseconds, as strings

local function fence(counter)
  local token = redis.call("INCR", counter)
  if token < now - 1000000 then
    token = now
    redis.call("SET", counter, string.format("%.0f", token))
  end
  redis.call("PEXPIRE", counter, ARGV[3])
  return token
end

if n == 1 then
  return fence(KEYS[2])
end
local fences = {}
for i = 1, n do
  fences[i] = fence(KEYS[n + i])
end
return fences
