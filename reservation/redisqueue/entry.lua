-- entry: an entry by its id (ARGV[2]), or by its token hash when ARGV[2]
-- is empty and ARGV[3] is set. Asking keeps a waiting entry in the line.
local id = ARGV[2]
if id == '' then
  id = redis.call('GET', prefix .. 't:' .. ARGV[3])
end
local now = now_ms()
if id then touch(id, now) end
local waits, left = advance(now)
return answer(id, now, waits, left)
