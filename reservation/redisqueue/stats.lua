-- stats: the line as a whole, for the seat map, after admitting whoever's
-- turn has come. A queue nobody joined has no state: it answers zeros and
-- creates no key.
if redis.call('EXISTS', state) == 0 then
  return {{}, 0, 0, {}, 0}
end
local now = now_ms()
local waits, left = advance(now)
return answer(nil, now, waits, left)
