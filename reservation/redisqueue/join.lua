-- join: a new entry at the back of the line.
-- ARGV[2] id, ARGV[3] customer, ARGV[4] token hash (hex), ARGV[5] rate,
-- ARGV[6] for_ms, ARGV[7] idle_ms, ARGV[8] keep_ms (how long an entry's
-- keys outlive its admission or its last call), ARGV[9] how long the
-- queue's own keys outlive its last join (ms).
local id = ARGV[2]
local now = now_ms()
redis.call('HSET', state, 'rate', ARGV[5], 'for_ms', ARGV[6], 'idle_ms', ARGV[7], 'keep_ms', ARGV[8])
local ticket = redis.call('HINCRBY', state, 'ticket', 1)
redis.call('HSET', prefix .. 'e:' .. id, 'customer', ARGV[3], 'token', ARGV[4], 'joined_ms', now, 'ticket', ticket)
redis.call('SET', prefix .. 't:' .. ARGV[4], id)
redis.call('ZADD', wait, ticket, id)
redis.call('ZADD', seen, now, id)
expire(id, tonumber(ARGV[7]) + tonumber(ARGV[8]))
for _, k in ipairs({wait, seen, state}) do
  redis.call('PEXPIRE', k, ARGV[9])
end
local waits, left = advance(now)
return answer(id, now, waits, left)
