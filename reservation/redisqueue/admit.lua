-- The waiting room of one screening, shared by every instance: the part
-- that every script of the queue begins with. Redis runs a script alone,
-- so every instance sees the same line, the same pace and the same clock
-- (Redis's TIME).
--
-- KEYS[1] wait:  sorted set of the waiting entries, by ticket (arrival order)
-- KEYS[2] seen:  sorted set of the waiting entries, by when last asked about (ms)
-- KEYS[3] state: hash of the queue: rate, for_ms, idle_ms, keep_ms (its
--                settings), ticket (the last ticket given), epoch and count
--                (the pace: the count-th admission since epoch is due at
--                epoch + count * 1000 / rate ms), admitted (every
--                admission since the queue began)
-- ARGV[1] the prefix of the entries' keys: prefix .. 'e:' .. id is an
--         entry's hash, prefix .. 't:' .. token hash its id. They share the
--         KEYS' hash tag, so they live in the same cluster slot.
local wait, seen, state = KEYS[1], KEYS[2], KEYS[3]
local prefix = ARGV[1]

local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

local function num(key, field, default)
  local v = redis.call('HGET', key, field)
  if v then return tonumber(v) end
  return default
end

local function due(count, epoch, rate)
  return epoch + math.floor(count * 1000 / rate)
end

-- forget deletes an entry that left the queue, and its token.
local function forget(id)
  local e = prefix .. 'e:' .. id
  local tok = redis.call('HGET', e, 'token')
  if tok then redis.call('DEL', prefix .. 't:' .. tok) end
  redis.call('DEL', e)
end

-- expire gives an entry's keys a lifetime: a safety net for queues
-- nobody calls on again, which prune never visits.
local function expire(id, ms)
  local e = prefix .. 'e:' .. id
  local tok = redis.call('HGET', e, 'token')
  if tok then redis.call('PEXPIRE', prefix .. 't:' .. tok, ms) end
  redis.call('PEXPIRE', e, ms)
end

-- touch records that the entry was asked about now, if it waits and has
-- not been left alone so long that it leaves.
local function touch(id, now)
  local last = redis.call('ZSCORE', seen, id)
  if last and tonumber(last) >= now - num(state, 'idle_ms', 60000) then
    redis.call('ZADD', seen, now, id)
    expire(id, num(state, 'idle_ms', 60000) + num(state, 'keep_ms', 0))
  end
end

-- advance lets waiting entries nobody asked about for idle_ms leave, then
-- admits from the head of the line every entry whose turn has come by
-- now, each once. It returns how long each admitted entry waited (ms) and
-- how many left.
local function advance(now)
  local rate = num(state, 'rate', 1)
  local for_ms = num(state, 'for_ms', 600000)
  local keep_ms = num(state, 'keep_ms', 0)
  local gone = redis.call('ZRANGEBYSCORE', seen, '-inf', now - num(state, 'idle_ms', 60000))
  for _, id in ipairs(gone) do
    redis.call('ZREM', seen, id)
    redis.call('ZREM', wait, id)
    forget(id)
  end
  local epoch = num(state, 'epoch', now)
  local count = num(state, 'count', 0)
  local waits = {}
  while due(count, epoch, rate) <= now do
    local head = redis.call('ZRANGE', wait, 0, 0)
    if #head == 0 then break end
    local id = head[1]
    redis.call('ZREM', wait, id)
    redis.call('ZREM', seen, id)
    local e = prefix .. 'e:' .. id
    redis.call('HSET', e, 'admitted_ms', now, 'until_ms', now + for_ms)
    expire(id, for_ms + keep_ms)
    waits[#waits + 1] = now - num(e, 'joined_ms', now)
    count = count + 1
  end
  if redis.call('ZCARD', wait) == 0 and due(count, epoch, rate) < now then
    -- Nobody waits and the pace is behind: it starts again from now, so
    -- that an idle queue saves up no burst of admissions.
    epoch, count = now, 0
  end
  redis.call('HSET', state, 'epoch', epoch, 'count', count)
  if #waits > 0 then redis.call('HINCRBY', state, 'admitted', #waits) end
  return waits, #gone
end

-- view returns an entry as the client sees it: id, customer, token hash,
-- position (0 once admitted), admitted (0/1), until_ms, expired (0/1),
-- eta_ms; an empty table for no such entry.
local function view(id, now)
  local f = redis.call('HMGET', prefix .. 'e:' .. id, 'customer', 'token', 'admitted_ms', 'until_ms')
  if not f[1] then return {} end
  if f[3] then
    local until_ms = tonumber(f[4])
    local expired = 0
    if now >= until_ms then expired = 1 end
    return {id, f[1], f[2], 0, 1, until_ms, expired, 0}
  end
  local rank = redis.call('ZRANK', wait, id)
  if not rank then return {} end
  local eta = due(num(state, 'count', 0) + rank, num(state, 'epoch', now), num(state, 'rate', 1)) - now
  return {id, f[1], f[2], rank + 1, 0, 0, 0, math.max(eta, 0)}
end

-- answer is what every script returns: the admissions and leavings it
-- made, the length of the line, the entry (empty without an id) and how
-- many the queue has admitted since it began.
local function answer(id, now, waits, left)
  local entry = {}
  if id then entry = view(id, now) end
  return {waits, left, redis.call('ZCARD', wait), entry, num(state, 'admitted', 0)}
end
