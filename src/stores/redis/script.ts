import { AIMD, MIN_SAMPLE, MOST_RAISES, SPENT_STREAK } from '../../core/adaptive-rate.js';
import type { Decision, DenialReason } from '../../core/decision.js';
import type { ResolvedPolicy } from '../../core/policy.js';
import type { StoreCost } from '../../pacer/store-contract.js';
import { KEPT, RAISE_MS as SAMPLED_RAISE_MS } from '../../core/sampled-rate.js';
import { LATE_MS, LATE_PERMITS, SAMPLE_TRIPS } from '../shared-rate.js';
import { RATE_WINDOW_MS } from '../../core/refusals.js';
import { LOW_ROOMS } from '../../core/low-room.js';
import { COUNTED_SHARED } from '../shared-counts.js';

/**
 * The token bucket and GCRA of `bucket-state.ts`, as one Lua script per decision: Redis runs a
 * script alone, so check, refill and consume are one step for every client, and it reads the
 * server's own clock (`TIME`), so clients' clocks never meet. The arithmetic is the core's, in
 * the same order (property-tested against it through a real server).
 *
 * KEYS[1]: the key's hash. ARGV[1]: the operation ('t' take, 'p' peek, 'b' block, 'l' lower, 'a'
 * learn, 'd' adjust, 'f' refused without a wait, 'w' refused with one, 'k' a round trip told, 'r'
 * reset, 'n' nothing). ARGV[2]: the time in ms, or '' for the server's (tests pass their own).
 * ARGV[3]: how many policies; then 4 values per policy (1 for gcra, else 0; limit; windowMs;
 * capacity); then the operation's: take: the client's round trip (ms; 0: none heard:
 * `StoreCall.roundTripMs`), stop at the first denial (1/0) and the costs; peek: the round trip and
 * the cost; block: ms, and for a count of 0 the limit it is of (0: none), the (0-based) first
 * policy of its unit and the round trip of its answer (no block where the key's own count agrees:
 * `agreesAtZero`); lower: the permits left, the round trip of the answer that said so (ms; 0: not
 * known), the limit the count is of (0: not named), then the (1-based) policies to lower, all when
 * none; learn: the limit and window the server advertised, the (0-based) first policy of its unit
 * (0: the main unit), the round trip of the answer that stated it, and 1 if the window was
 * inferred; adjust: one amount per policy (negative gives back); refused: when the refused request
 * was sent (ms from now, 0 or less), then the policies to lower to 0 as for lower; refused with a
 * wait: when it was sent, and the wait (ms); a round trip told: its ms (an answer's,
 * `StoreCall.roundTripMs`). A cost is a number, charged to every policy, or one amount per policy
 * each followed by a comma (`1,812,`: see `StoreCost` and `encodeCost`); an amount of 0 is always
 * allowed.
 *
 * The hash holds `b` (blocked until, server ms) and per policy `sN` (stamp) and `vN` (tokens, or
 * ms of debt ahead of the stamp for gcra), written with 17 significant digits so they read back
 * exactly; and, per policy `N` of a unit whose server's policy a client learned (the main
 * unit's first, `N` = 1; another unit's first), `lqN` and `lwN` (its limit and window), `lsN`
 * and `lvN` (stamp and debt of its GCRA), `lhN` and `ltN` (the round trip it spaces permits by
 * and when it was heard: `SharedLearned` in bucket-state.ts), and once its counts are looked at
 * (shared-counts.ts) `lkN` (the full counts kept: send, count, ... joined by commas), `lcN` (when
 * they showed a bucket, or last cut it), `lnN` (its cuts), `liN` (1: its window was inferred),
 * `lbN` (its last take on time), `lfN` (when it was learned), `llN` (the count that last cut
 * it) and `lrN` (its low counts in a row); the rate refusals taught
 * (`SharedRate` in shared-rate.ts): `rp` (per ms), `rc` (ceiling), `rk` (cut at), `rs` and `rv`
 * (stamp and debt), `rn` (streak), `rr` (refused at), `rg` (granted since), `rq` (the first of
 * those granted at), `rm` (the sample a wait taught it from), `rt` (its refusals' longest round
 * trip), `rh` (the full counts it kept, as `lkN`), `rf` (its sample's first grant); and the
 * admissions (`SharedAdmissions`): `ac` and `aa` (count and its time), `an` and `af` (sample and
 * since), `ab` (when the count began; none: long ago); and `kt` and `kh`, the longest round trip a
 * client told and when (see `spreadAt` in bucket-state.ts). A key is written only when it changed
 * (a denial writes nothing), with PEXPIRE to the moment it is at rest again, so it expires once
 * it is full and unblocked: no sweeper.
 *
 * A take or peek replies with 6 integers per decision: allowed (1/0), remaining, retryAfterMs,
 * resetMs, limit, reason (0 none, 1 rate, 2 blocked).
 */
export const SCRIPT = `
if redis.replicate_commands then pcall(redis.replicate_commands) end
local EPS = 1e-9
local key, op = KEYS[1], ARGV[1]
local now
if ARGV[2] == '' then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000
else
  now = tonumber(ARGV[2])
end
if op == 'n' then return {} end
if op == 'r' then
  redis.call('DEL', key)
  return {}
end
local n = tonumber(ARGV[3])
local P, fields = {}, {'b'}
for i = 1, n do
  local at = 3 + (i - 1) * 4
  P[i] = { gcra = ARGV[at + 1] == '1', limit = tonumber(ARGV[at + 2]),
           window = tonumber(ARGV[at + 3]), cap = tonumber(ARGV[at + 4]) }
  fields[#fields + 1] = 's' .. i
  fields[#fields + 1] = 'v' .. i
end
local arg = 4 + n * 4
local LEARNED_FIELDS = {'lq', 'lw', 'ls', 'lv', 'lh', 'lt', 'lk', 'lc', 'ln', 'li', 'lb', 'lf', 'll', 'lr'}
for i = 1, n do
  for _, f in ipairs(LEARNED_FIELDS) do fields[#fields + 1] = f .. i end
end
local RATE_FIELDS = {'rp', 'rc', 'rk', 'rs', 'rv', 'rn', 'rr', 'rg', 'ac', 'aa', 'an', 'af', 'ab', 'rq', 'rm', 'rt', 'rh', 'rf'}
local first_rate = #fields + 1
for _, f in ipairs(RATE_FIELDS) do fields[#fields + 1] = f end
local first_low = #fields + 1
for i = 1, n do fields[#fields + 1] = 'o' .. i end
local first_trip = #fields + 1
fields[#fields + 1] = 'kt'
fields[#fields + 1] = 'kh'
local raw = redis.call('HMGET', key, unpack(fields))
local blocked = tonumber(raw[1]) or 0
-- R: the rate refusals taught (SharedRate), if any; A: the admissions (SharedAdmissions).
local R, A = nil, nil
do
  local r = {}
  for k = 1, 7 do r[k] = tonumber(raw[first_rate + k - 1]) end
  if r[1] and r[2] and r[3] and r[4] and r[5] and r[6] and r[7] and r[1] > 0 and r[2] >= 0 then
    R = { perMs = r[1], ceiling = r[2], cutAt = r[3], s = r[4], v = r[5], streak = r[6], refusedAt = r[7],
          granted = tonumber(raw[first_rate + 7]) or 0, probe_at = tonumber(raw[first_rate + 13]) or r[7],
          sample = tonumber(raw[first_rate + 14]) or 0, rt = tonumber(raw[first_rate + 15]) or 0 }
  end
  local ac, aa = tonumber(raw[first_rate + 8]), tonumber(raw[first_rate + 9])
  local an, af = tonumber(raw[first_rate + 10]), tonumber(raw[first_rate + 11])
  local ab = tonumber(raw[first_rate + 12]) or -math.huge
  if ac and aa then
    if an and af then A = { count = ac, at = aa, sample = an, since = af, from = ab }
    else A = { count = ac, at = aa, sample = 0, since = aa, from = ab } end
  end
end
local had_rate = R ~= nil
-- The full counts kept while looking for a bucket, {send, count, ...} (shared-counts.ts).
local function highs_of(text)
  if not text then return nil end
  local h = {}
  for x in string.gmatch(text, '[^,]+') do
    local v = tonumber(x)
    if v == nil or v ~= v or v == math.huge or v == -math.huge then return nil end
    h[#h + 1] = v
  end
  if #h % 2 == 1 or #h > ${2 * COUNTED_SHARED.KEPT} then return nil end
  return h
end
if R then
  R.highs = highs_of(raw[first_rate + 16])
  R.sample_from = tonumber(raw[first_rate + 17])
  if R.sample_from and (R.sample_from ~= R.sample_from or math.abs(R.sample_from) == math.huge) then
    R.sample_from = nil
  end
end
-- L[i]: the learned policy that counts policy i's amounts, if any (LEARNED_FIELDS, in order).
local L = {}
for i = 1, n do
  local at = 2 * n + 1 + (i - 1) * #LEARNED_FIELDS
  local lq, lw = tonumber(raw[at + 1]), tonumber(raw[at + 2])
  local ls, lv = tonumber(raw[at + 3]), tonumber(raw[at + 4])
  if lq and lw and ls and lv then
    local l = { limit = lq, window = lw, s = ls, v = lv, rt = tonumber(raw[at + 5]), heard = tonumber(raw[at + 6]) }
    l.highs = highs_of(raw[at + 7])
    l.counted = tonumber(raw[at + 8])
    local cuts = tonumber(raw[at + 9])
    if cuts and cuts > 0 and cuts == math.floor(cuts) then l.cuts = cuts end
    l.inferred = raw[at + 10] == '1'
    l.busy = tonumber(raw[at + 11])
    l.from = tonumber(raw[at + 12])
    l.cut_count = tonumber(raw[at + 13])
    local run = tonumber(raw[at + 14])
    if run and run > 0 and run == math.floor(run) then l.low_run = run end
    L[i] = l
  end
end
local S, V = {}, {}
for i = 1, n do
  local s, v = tonumber(raw[2 * i]), tonumber(raw[2 * i + 1])
  if s == nil or v == nil then
    s = now
    if P[i].gcra then v = 0 else v = P[i].cap end
  end
  S[i], V[i] = s, v
end
-- The longest round trip a client told, halving every longest window of the key's since, and
-- a policy without a burst spread by half of it (spreadAt in bucket-state.ts): a take or peek
-- tells the client's first, an answer's ('k', 'l', 'a') its own.
local trip, trip_at = tonumber(raw[first_trip]), tonumber(raw[first_trip + 1])
local trip_told, spaced, longest = false, false, 0
for i = 1, n do
  if P[i].cap == 1 then spaced = true end
  if P[i].window > longest then longest = P[i].window end
end
-- A round trip of ms heard at, as it holds at t: halved every window since (heldAt in
-- bucket-state.ts).
local function held_at(ms, at, t, window)
  if not (ms and at) then return 0 end
  if t > at then return ms * 0.5 ^ ((t - at) / window) end
  return ms
end
local function tell_trip(told, keep)
  local held = held_at(trip, trip_at, now, longest)
  if spaced and told > held and told < math.huge then
    held = told
    if keep then trip, trip_at, trip_told = told, now, true end
  end
  return held
end
if op == 't' or op == 'p' then
  local half = math.ceil(tell_trip(tonumber(ARGV[arg]) or 0, op == 't') / 2)
  arg = arg + 1
  if spaced and half > 0 then
    for i = 1, n do
      local p = P[i]
      if p.cap == 1 then p.window = p.window + math.min(half, p.window / 2) end
    end
  end
end
local function debt(i, at)
  local elapsed = at - S[i]
  if not (elapsed > 0) then return V[i] end
  if V[i] > elapsed then return V[i] - elapsed end
  return 0
end
local function tokens(i, at)
  local p = P[i]
  if p.gcra then return p.cap - (debt(i, at) * p.limit) / p.window end
  local elapsed = at - S[i]
  if not (elapsed > 0) then return V[i] end
  local refilled = V[i] + (elapsed * p.limit) / p.window
  if refilled < p.cap then return refilled end
  return p.cap
end
local function whole(x)
  local w = math.floor(x + EPS)
  if w > 0 then return w end
  return 0
end
local function wholems(ms)
  if ms > EPS then return math.ceil(ms - EPS) end
  return 0
end
-- O[i]: policy i's least room since each take, {time, room, ...} (low-room.ts), kept for a key
-- whose costs come per policy (limits per unit: their reserves are given back).
local O, lows = {}, false
for i = 1, n do
  local o, text, ok = {}, raw[first_low + i - 1], true
  if text then
    lows = true
    for x in string.gmatch(text, '[^,]+') do
      local v = tonumber(x)
      if v == nil then ok = false else o[#o + 1] = v end
    end
  end
  if not ok or #o % 2 == 1 or #o > ${2 * LOW_ROOMS} then o = {} end
  O[i] = o
end
local function note_room(i)
  local o = O[i]
  local room = P[i].cap - tokens(i, now)
  while #o >= 2 and o[#o] >= room do
    o[#o] = nil
    o[#o] = nil
  end
  o[#o + 1] = now
  o[#o + 1] = room
  if #o > ${2 * LOW_ROOMS} then
    local closest = 1
    for k = 3, #o - 3, 2 do
      if o[k + 3] - o[k + 1] < o[closest + 3] - o[closest + 1] then closest = k end
    end
    o[closest + 3] = o[closest + 1]
    table.remove(o, closest)
    table.remove(o, closest)
  end
end
local function room_since(i, at)
  local o = O[i]
  for k = 1, #o, 2 do if o[k] > at then return o[k + 1] end end
  return math.huge
end
local function fits(i, at, cost) return tokens(i, at) >= cost - EPS end
local function costs_of(text)
  local C = {}
  if string.find(text, ',', 1, true) then
    local i = 0
    for part in string.gmatch(text, '[^,]+') do
      i = i + 1
      C[i] = tonumber(part)
    end
    for j = i + 1, n do C[j] = 0 end
  else
    local c = tonumber(text)
    for j = 1, n do C[j] = c end
  end
  return C
end
local function settle(i, cost, estimate)
  local wait = math.max(1, math.ceil(estimate - 1e-6))
  local step = 0
  while step < 8 and wait > 1 and fits(i, now + wait - 1, cost) do
    wait = wait - 1
    step = step + 1
  end
  step = 0
  while step < 8 and not fits(i, now + wait, cost) do
    wait = wait + 1
    step = step + 1
  end
  return wait
end
local function decide_one(i, cost)
  local p = P[i]
  local t = tokens(i, now)
  if cost == 0 then return {1, whole(t), 0, 0, p.limit, 0}, nil end
  if t < cost - EPS then
    local reset
    if p.gcra then reset = wholems(debt(i, now))
    else reset = wholems(((p.cap - t) * p.window) / p.limit) end
    return {0, whole(t), settle(i, cost, ((cost - t) * p.window) / p.limit), reset, p.limit, 1}
  end
  local after, reset
  if p.gcra then
    after = debt(i, now) + (cost * p.window) / p.limit
    reset = wholems(after)
  else
    after = t - cost
    reset = wholems(((p.cap - after) * p.window) / p.limit)
  end
  return {1, whole(t - cost), 0, reset, p.limit, 0}, after
end
local function combine(ds)
  local b = ds[1]
  local rem, reset = b[2], b[4]
  for k = 1, #ds do
    local d = ds[k]
    if d[2] < rem then rem = d[2] end
    if d[4] > reset then reset = d[4] end
    local tighter
    if b[1] == 1 then tighter = d[1] == 0 or d[2] < b[2]
    else tighter = d[1] == 0 and d[3] > b[3] end
    if tighter then b = d end
  end
  return {b[1], rem, b[3], reset, b[5], b[6]}
end
local FLOOR = 1 / ${AIMD.FLOOR_MS}
-- Past the window it was learned in (settled in bucket-state.ts).
local function lsettled(l, at) return not l.from or at >= l.from + l.window end
-- A late client's credit (LearnedPart.lateMs in bucket-state.ts).
local function llate(l)
  local spaced = l.window / l.limit
  if spaced < ${LATE_MS} then return spaced end
  return ${LATE_MS}
end
local function ldebt(l, at)
  local elapsed = at - l.s
  if not (elapsed > 0) then return l.v end
  local floor = 0
  -- From a window after it was learned.
  if lsettled(l, at) then floor = -llate(l) end
  if l.v - elapsed > floor then return l.v - elapsed end
  return floor
end
-- The round trip a learned policy spaces its permits by (roundTripAt in bucket-state.ts).
local function lrtt(l, at) return held_at(l.rt, l.heard, at, l.window) end
local function lspacing(l, at)
  if l.counted then return l.window / l.limit end
  return (l.window + llate(l) + lrtt(l, at) / 2) / l.limit
end
local function decide_learned(l, cost)
  if cost == 0 then return {1, 0, 0, 0, l.limit, 0}, nil end
  local spacing = lspacing(l, now)
  local d = ldebt(l, now)
  if d > EPS * spacing then return {0, 0, wholems(d), wholems(d), l.limit, 1} end
  local after = d + cost * spacing
  return {1, 0, 0, wholems(after), l.limit, 0}, after
end
-- The shared rate refusals taught, as shared-rate.ts computes it.
local function rate_at(r, at)
  local elapsed = 0
  if at > r.cutAt then elapsed = at - r.cutAt end
  local doubled = r.perMs * 2 ^ (elapsed / ${AIMD.DOUBLE_MS})
  if not (r.ceiling > 0) then return doubled end
  local raised = r.ceiling
  local after = ${AIMD.RAISE_MS}
  if r.sample > 0 then after = ${SAMPLED_RAISE_MS} end
  if elapsed >= after then
    local raises = math.min(${MOST_RAISES}, 1 + math.floor((elapsed - after) / ${AIMD.DOUBLE_MS}))
    raised = r.ceiling * ${AIMD.RAISE} ^ ((raises * (raises + 1)) / 2)
  end
  local target = raised * ${AIMD.HEADROOM}
  if not (r.perMs < target) then return r.perMs end
  local approached = target - (target - r.perMs) * 2 ^ (-elapsed / ${AIMD.APPROACH_MS})
  if approached < doubled then return approached end
  return doubled
end
local function rdebt(r, at, spacing)
  local elapsed = at - r.s
  if not (elapsed > 0) then return r.v end
  local debt = r.v - elapsed
  local credit = -${LATE_PERMITS} * spacing
  if debt > credit then return debt end
  return credit
end
-- As spacingOf.
local function rspacing(r, at) return (1 + r.rt / 2 / ${RATE_WINDOW_MS}) / rate_at(r, at) end
local function decide_rate(r, cost)
  if cost == 0 then return {1, 0, 0, 0, 1, 0}, nil end
  local spacing = rspacing(r, now)
  local d = rdebt(r, now, spacing)
  if d > EPS * spacing then return {0, 0, wholems(d), wholems(d), 1, 1} end
  local after = d + cost * spacing
  return {1, 0, 0, wholems(after), 1, 0}, after
end
local function decayed(a, at)
  local elapsed = at - a.at
  if elapsed > 0 then return a.count * math.exp(-elapsed / ${AIMD.ADMISSIONS_MS}) end
  return a.count
end
local function share_counted(a)
  local history = now - a.from
  if not (history > ${AIMD.SEED_MS}) then history = ${AIMD.SEED_MS} end
  return 1 - math.exp(-history / ${AIMD.ADMISSIONS_MS})
end
-- recentPerMs in shared-rate.ts.
local function recent_per_ms(a)
  return decayed(a, now) / ${AIMD.ADMISSIONS_MS} / share_counted(a)
end
local function admit(amount, out_of_sample)
  if A == nil then A = { count = 0, at = now, sample = 0, since = now, from = now } end
  local count = decayed(A, now) + amount
  if count > 0 then A.count = count else A.count = 0 end
  if now > A.at then A.at = now end
  if out_of_sample then return end
  if not (A.sample > 0) and amount > 0 then A.since = now end
  local sample = A.sample + amount
  if sample > 0 then A.sample = sample else A.sample = 0 end
end
local function sampled_per_ms(in_flight)
  local sample = A.sample - in_flight
  if not (sample >= ${MIN_SAMPLE}) then return 0 end
  local span = now - A.since
  if not (span > ${AIMD.SEED_MS}) then span = ${AIMD.SEED_MS} end
  local sampled = sample / span
  local recent = decayed(A, now) / ${AIMD.ADMISSIONS_MS}
  if sampled > recent then return sampled end
  return recent
end
local own_per_ms = P[1].limit / P[1].window
local function pause(r)
  local spacing = rspacing(r, now)
  local owed = rdebt(r, now, spacing)
  local ms = math.min(${AIMD.MAX_PAUSE_MS}, ${AIMD.PAUSE_GROWTH} ^ r.streak * spacing)
  if owed > ms then r.v = owed else r.v = ms end
  r.s = now
end
-- As refusedProbe.
local function refused_probe(sent)
  return R.granted == 0 or sent < R.probe_at + rspacing(R, now)
end
local function refused(sent)
  if A == nil then A = { count = 0, at = now, sample = 0, since = now, from = now } end
  local admitted = decayed(A, now) / ${AIMD.ADMISSIONS_MS}
  local whole = recent_per_ms(A)
  admit(-1)
  if R ~= nil and sent <= R.refusedAt then return end
  if R == nil then
    local seed = own_per_ms * ${AIMD.SEED_CUT}
    local per = seed
    if admitted > 0 and admitted < seed then per = admitted end
    if not (per > FLOOR) then per = FLOOR end
    if not (per < own_per_ms) then return end
    R = { perMs = per, ceiling = 0, cutAt = now, s = now, v = 0, streak = 0, refusedAt = now, granted = 0,
          probe_at = now, sample = 0, rt = 0 }
    pause(R)
    return
  end
  R.refusedAt = now
  R.sample = 0
  local in_flight = 0
  if R.granted > 1 then in_flight = R.granted - 1 end
  local probe = refused_probe(sent)
  R.granted = 0
  if now >= R.cutAt + ${AIMD.HOLD_MS} and not probe then
    local current = rate_at(R, now)
    local measured = whole > 0 and whole < current
    local cut
    if measured then
      R.ceiling = math.max(whole, current / 4)
      cut = R.ceiling * ${AIMD.HEADROOM}
    else
      R.ceiling = current
      cut = current * ${AIMD.CUT}
    end
    if cut > FLOOR then R.perMs = cut else R.perMs = FLOOR end
    R.cutAt = now
    R.streak = 0
  elseif R.streak < 30 then
    R.streak = R.streak + 1
    local sampled = 0
    if probe and R.ceiling == 0 and R.streak >= ${SPENT_STREAK} then sampled = sampled_per_ms(in_flight) end
    if sampled > 0 then
      if sampled < own_per_ms then R.ceiling = sampled else R.ceiling = own_per_ms end
      local held = R.ceiling
      if R.perMs < held then held = R.perMs end
      held = held * ${AIMD.HEADROOM}
      if held > FLOOR then R.perMs = held else R.perMs = FLOOR end
      R.cutAt = now
    elseif probe then
      R.perMs = rate_at(R, now)
      R.cutAt = now
    end
  end
  pause(R)
end
-- A refusal with a wait, as refusedWithWait in shared-rate.ts.
local function refused_with_wait(sent, wait)
  if A == nil then A = { count = 0, at = now, sample = 0, since = now, from = now } end
  local since = A.since
  admit(-1, sent < since)
  local rt = math.min(now - sent, ${RATE_WINDOW_MS})
  if R ~= nil and rt > R.rt then R.rt = rt end
  if R ~= nil and sent <= R.refusedAt then
    if sent > R.cutAt or (R.sample_from and sent < R.sample_from) then return end
    if R.sample > 1 then
      local shrunk = (R.sample - 1) / R.sample
      R.sample = R.sample - 1
      R.perMs = R.perMs * shrunk
      R.ceiling = R.ceiling * shrunk
    end
    return
  end
  if R ~= nil and R.sample > 0 and R.streak == 0 and refused_probe(sent) then
    R.refusedAt = now
    R.granted = 0
    R.streak = 1
    return
  end
  local admitted = A.sample
  local window
  if wait >= 1000 and wait % 1000 == 0 then
    window = math.max(1, math.floor((sent - (now - sent) - since + wait - 1000) / 1000) + 1) * 1000
  else
    window = now + wait - since
  end
  -- Too few to say, or too short (SAMPLE_TRIPS): the sample goes on.
  if not (admitted >= ${MIN_SAMPLE}) or (R ~= nil and window < ${SAMPLE_TRIPS} * R.rt) then
    if R ~= nil then R.refusedAt = now end
    return
  end
  A.sample = 0
  local ceiling = admitted / window
  local per = ceiling * ${AIMD.HEADROOM}
  if not (per > FLOOR) then per = FLOOR end
  -- As keptPerMs.
  if R ~= nil and R.sample > 0 and now - since >= ${AIMD.DOUBLE_MS} then
    local kept = rate_at(R, now) * ${KEPT}
    if admitted >= kept * (now - since) and kept > per then
      per = kept
      ceiling = kept / ${AIMD.HEADROOM}
    end
  end
  if not (per < own_per_ms) then
    R = nil
    return
  end
  R = { perMs = per, ceiling = ceiling, cutAt = now, s = now, v = 0, streak = 0, refusedAt = now, granted = 0,
        probe_at = now, sample = admitted, rt = rt, sample_from = since }
end
local function decision(C, take)
  local ds, afters, lafters, rafter = {}, {}, {}, nil
  for i = 1, n do ds[i], afters[i] = decide_one(i, C[i]) end
  for i = 1, n do
    if L[i] then ds[#ds + 1], lafters[i] = decide_learned(L[i], C[i]) end
  end
  local r = R
  if r then ds[#ds + 1], rafter = decide_rate(r, C[1]) end
  local verdict = ds[1]
  if #ds > 1 then verdict = combine(ds) end
  if take and verdict[1] == 1 then
    for i = 1, n do
      if afters[i] ~= nil then
        if lows then note_room(i) end
        V[i] = afters[i]
        if now > S[i] then S[i] = now end
      end
      if L[i] and lafters[i] ~= nil then
        local l = L[i]
        -- Taken within a spacing of when it was due: its clients pace into it (busyAt).
        if l.counted and now - (l.s + l.v) < lspacing(l, now) then l.busy = now end
        L[i].v = lafters[i]
        if now > L[i].s then L[i].s = now end
      end
    end
    if r and rafter ~= nil then
      r.v = rafter
      if now > r.s then r.s = now end
      if r.granted == 0 then r.probe_at = now end
      r.granted = r.granted + C[1]
    end
    -- Granted: counted in the admissions; a rate grown back to the key's own is dropped.
    admit(C[1])
    if R and not (rate_at(R, now) < own_per_ms) then R = nil end
  end
  return verdict
end
local function decide(C, take)
  if now < blocked then
    local wait = wholems(blocked - now)
    if now + wait < blocked then wait = wait + 1 end
    local rate = decision(C, false)
    return {0, 0, math.max(wait, rate[3]), math.max(wait, rate[4]), rate[5], 2}
  end
  return decision(C, take)
end

local out, changed = {}, false
-- An answer of the unit whose first policy is of took rt ms (heardRoundTrip).
local function heard(of, rt)
  local l = L[of]
  if l and rt > lrtt(l, now) then
    l.rt, l.heard = math.min(rt, l.window), now
    changed = true
  end
end
-- A learned policy found to be a bucket, steered by its counts (shared-counts.ts).
local function shows_bucket(k, limit, remaining, sent, window)
  if limit < 3 or remaining < limit - 2 then return false end
  local h = k.highs or {}
  h[#h + 1] = sent
  h[#h + 1] = remaining
  if #h > ${2 * COUNTED_SHARED.KEPT} then
    table.remove(h, 1)
    table.remove(h, 1)
  end
  k.highs = h
  changed = true
  for j = 1, 2 do
    local found, first, at = 0, math.huge, #h - 1
    while at >= 1 and found < 2 * j + 1 do
      if h[at + 1] >= limit - j then
        found = found + 1
        if h[at] < first then first = h[at] end
      end
      at = at - 2
    end
    if found == 2 * j + 1 and now - first < window then
      k.highs = nil
      return true
    end
  end
  return false
end
local function cut(l, by)
  l.window = math.min(l.limit * ${AIMD.FLOOR_MS}, l.window * by)
  l.cuts = (l.cuts or 0) + 1
  l.counted = now
  changed = true
end
local function heard_count(l, remaining, sent)
  local limit = l.limit
  if limit < 3 or not (remaining >= 0) then return end
  if not l.counted then
    if not l.inferred then return end
    if shows_bucket(l, limit, remaining, sent, l.window) then l.counted = now end
    return
  end
  if not (sent > l.counted) then return end
  local cuts = l.cuts or 0
  local low_run = 0
  if remaining <= limit / 2 then low_run = (l.low_run or 0) + 1 end
  if low_run ~= (l.low_run or 0) then
    if low_run > 0 then l.low_run = low_run else l.low_run = nil end
    changed = true
  end
  local full = limit - 1
  if limit >= 5 then full = limit - 2 end
  if remaining >= full then
    if l.cut_count then
      l.cut_count = nil
      changed = true
    end
    if not l.busy or l.busy < sent - l.window / limit then return end
    local gain = ${COUNTED_SHARED.GROW}
    if cuts == 0 then gain = ${COUNTED_SHARED.FAST} end
    local by = 1 + gain / limit
    l.window = math.max(math.max(1, limit / own_per_ms), l.window / by)
    changed = true
  elseif remaining > limit / 2 then
    if cuts == 0 then
      l.cuts = 1
      changed = true
    end
  elseif (cuts == 0 or low_run >= ${COUNTED_SHARED.LOW_RUN})
    and (not l.cut_count or remaining < l.cut_count
      or sent > l.counted + ${COUNTED_SHARED.DRAIN_WINDOWS} * l.window) then
    local by = 1 / ${COUNTED_SHARED.CUT}
    if cuts == 0 then by = 2 end
    cut(l, by)
    l.cut_count = remaining
  end
end
-- A count of limit (remaining) of a request sent at sent, of policy of (countHeard in
-- bucket-state.ts).
local function own_burst(p, limit) return p and p.cap >= 2 and p.cap ~= p.limit and p.cap == limit end
-- countsOwn in bucket-state.ts: a window inferred of the key's own burst, or of its own limit
-- over a window no longer (within a tenth).
local function counts_own(p, limit, window)
  return own_burst(p, limit) or (p and p.limit == limit and window <= p.window + p.window / 10)
end
local function count_heard(remaining, limit, sent, of)
  local l = L[of]
  if of == 1 and R and own_burst(P[1], limit) then
    R = nil
    changed = true
    return
  end
  if not l and of == 1 and R then
    local window = math.max(1, limit / rate_at(R, now))
    local look = window
    if not (window > ${RATE_WINDOW_MS}) then look = ${RATE_WINDOW_MS} end
    if not shows_bucket(R, limit, remaining, sent, look) then return end
    L[1] = { limit = limit, window = window, s = now, v = 0, counted = now, inferred = true, from = now }
    R = nil
    return
  end
  if not l or l.limit ~= limit then return end
  local looking = not l.counted
  heard_count(l, remaining, sent)
  if looking and l.counted then R = nil end
end
-- A refusal of a learned bucket's request halves it, and teaches no rate (rateRefused).
local function refused_counted(sent)
  local l = L[1]
  if not (l and l.counted) then return false end
  if sent > l.counted then cut(l, 2) end
  return true
end
if op == 't' then
  local stop = ARGV[arg] == '1'
  for k = arg + 1, #ARGV do
    -- Costs per policy: a key with limits per unit, whose reserves may be given back.
    if string.find(ARGV[k], ',', 1, true) then lows = true end
    local d = decide(costs_of(ARGV[k]), true)
    if d[1] == 1 then changed = true end
    for j = 1, 6 do out[#out + 1] = d[j] end
    if stop and d[1] == 0 then break end
  end
elseif op == 'p' then
  out = decide(costs_of(ARGV[arg]), false)
elseif op == 'b' then
  local untilMs = now + tonumber(ARGV[arg])
  -- A count of 0 of the learned policy the key's own count agrees with blocks nothing (an
  -- inferred one's from a window after it was learned: agreesAtZero).
  local of = (tonumber(ARGV[arg + 2]) or 0) + 1
  local named, l, p = tonumber(ARGV[arg + 1]) or 0, L[of], P[of]
  local rt = tonumber(ARGV[arg + 3]) or 0
  if named > 0 and l and l.limit == named and not (l.inferred and not lsettled(l, now))
      and (decision(costs_of('1'), false)[1] ~= 1 or l.s > now - rt) then
    untilMs = blocked
  elseif named > 0 and not l and p and (p.limit == named or own_burst(p, named))
      and (decision(costs_of('1'), false)[1] ~= 1 or (S[of] < now and S[of] > now - rt)) then
    -- Nothing learned of it: a count of the key's own limit (or burst) it agrees with (a state
    -- made just now, stamped now, took nothing).
    untilMs = blocked
  end
  if untilMs > blocked then
    blocked = untilMs
    changed = true
  end
elseif op == 'a' then
  local limit, window = tonumber(ARGV[arg]), tonumber(ARGV[arg + 1])
  local of = (tonumber(ARGV[arg + 2]) or 0) + 1
  local l = L[of]
  local inferred = ARGV[arg + 4] == '1'
  -- A window of the key's own burst or limit is its own policy's to count (countsOwn).
  if of <= n and not (inferred and counts_own(P[of], limit, window)) and not (l and l.limit == limit and (l.counted or math.abs(l.window - window) <= window / 10)) then
    -- The network's round trip is kept (learn in bucket-state.ts).
    if l then L[of] = { limit = limit, window = window, s = now, v = 0, rt = l.rt, heard = l.heard, inferred = inferred, from = now }
    else L[of] = { limit = limit, window = window, s = now, v = 0, inferred = inferred, from = now } end
    -- Admitted at more than twice its rate lately: a bucket, paced from that rate
    -- (foundByAdmissions in shared-counts.ts).
    if inferred and of == 1 and A and limit >= 3 then
      local per = recent_per_ms(A)
      if not (per < own_per_ms) then per = own_per_ms end
      if per * window > ${COUNTED_SHARED.DISPROVED} * limit then
        L[of].window = limit / per
        L[of].counted = now
      end
    end
    changed = true
  end
  heard(of, tonumber(ARGV[arg + 3]) or 0)
  tell_trip(tonumber(ARGV[arg + 3]) or 0, true)
elseif op == 'l' then
  local remaining = tonumber(ARGV[arg])
  local rt = tonumber(ARGV[arg + 1]) or 0
  local named = tonumber(ARGV[arg + 2]) or 0
  local which = {}
  for k = arg + 3, #ARGV do which[#which + 1] = tonumber(ARGV[k]) end
  if #which == 0 then for i = 1, n do which[i] = i end end
  heard(which[1], rt)
  tell_trip(rt, true)
  for _, i in ipairs(which) do
    if P[i] and tokens(i, now) > remaining then
      local p = P[i]
      if p.gcra then V[i] = ((p.cap - remaining) * p.window) / p.limit else V[i] = remaining end
      if now > S[i] then S[i] = now end
      changed = true
    end
  end
  if named > 0 then count_heard(remaining, named, now - rt, which[1]) end
elseif op == 'f' then
  local sent = now + math.min(0, tonumber(ARGV[arg]) or 0)
  local which = {}
  for k = arg + 1, #ARGV do which[#which + 1] = tonumber(ARGV[k]) end
  if #which == 0 then for i = 1, n do which[i] = i end end
  for _, i in ipairs(which) do
    if P[i] and tokens(i, now) > 0 then
      local p = P[i]
      if p.gcra then V[i] = (p.cap * p.window) / p.limit else V[i] = 0 end
      if now > S[i] then S[i] = now end
    end
  end
  if not refused_counted(sent) then refused(sent) end
  changed = true
elseif op == 'w' then
  local sent = now + math.min(0, tonumber(ARGV[arg]) or 0)
  local wait = tonumber(ARGV[arg + 1]) or 0
  if now + wait > blocked then blocked = now + wait end
  if not refused_counted(sent) then refused_with_wait(sent, wait) end
  changed = true
elseif op == 'd' then
  local reserved = tonumber(ARGV[arg + n])
  for i = 1, n do
    local amount = tonumber(ARGV[arg + i - 1]) or 0
    if amount ~= 0 then
      local p = P[i]
      -- A give-back is at most the least room the policy had since the reserve (low-room.ts).
      local own = amount
      if amount > 0 then
        if lows then note_room(i) end
      elseif reserved and lows then
        own = -math.min(-amount, room_since(i, now + reserved))
      end
      if p.gcra then
        V[i] = math.max(0, debt(i, now) + (own * p.window) / p.limit)
      else
        V[i] = math.min(p.cap, tokens(i, now) - own)
      end
      if now > S[i] then S[i] = now end
      local l = L[i]
      if l then
        l.v = math.max(0, ldebt(l, now) + amount * lspacing(l, now))
        if now > l.s then l.s = now end
      end
      if i == 1 and R then
        local spacing = rspacing(R, now)
        R.v = math.max(0, rdebt(R, now, spacing) + amount * spacing)
        if now > R.s then R.s = now end
      end
      changed = true
    end
  end
elseif op == 'k' then
  tell_trip(tonumber(ARGV[arg]) or 0, true)
end
if trip_told then changed = true end
if changed then
  local rest = 0
  if blocked > now then rest = blocked - now end
  for i = 1, n do
    local p, r = P[i], 0
    if p.gcra then r = debt(i, now)
    else
      local t = tokens(i, now)
      if t < p.cap then r = ((p.cap - t) * p.window) / p.limit end
    end
    if r > rest then rest = r end
  end
  for i = 1, n do
    local l = L[i]
    if l then
      local kept = 2 * l.window
      if l.counted then kept = ${COUNTED_SHARED.FORGET_MS} end
      local r = math.max(ldebt(l, now), l.s + kept - now)
      if r > rest then rest = r end
    end
  end
  if R then
    local r = math.max(rdebt(R, now, rspacing(R, now)), R.cutAt + ${AIMD.RAISE_MS} - now)
    if r > rest then rest = r end
  end
  -- Admissions are kept for the rate a first refusal makes (restsAt in bucket-state.ts).
  if A and A.at + ${AIMD.ADMISSIONS_MS} - now > rest then rest = A.at + ${AIMD.ADMISSIONS_MS} - now end
  -- A round trip told, two of the key's longest windows.
  if trip_at and trip_at + 2 * longest - now > rest then rest = trip_at + 2 * longest - now end
  if rest <= 0 then
    redis.call('DEL', key)
  else
    local set = {'b', string.format('%.17g', blocked)}
    -- Fields of the counts no longer kept (shared-counts.ts).
    local gone = {}
    local function numbers(list)
      local texts = {}
      for k = 1, #list do texts[k] = string.format('%.17g', list[k]) end
      return table.concat(texts, ',')
    end
    -- A field holding a number, or gone when there is none.
    local function put(field, value)
      if value then
        set[#set + 1] = field
        set[#set + 1] = string.format('%.17g', value)
      else gone[#gone + 1] = field end
    end
    for i = 1, n do
      set[#set + 1] = 's' .. i
      set[#set + 1] = string.format('%.17g', S[i])
      set[#set + 1] = 'v' .. i
      set[#set + 1] = string.format('%.17g', V[i])
    end
    if lows then
      for i = 1, n do
        if #O[i] > 0 then
          local texts = {}
          for k = 1, #O[i] do texts[k] = string.format('%.17g', O[i][k]) end
          set[#set + 1] = 'o' .. i
          set[#set + 1] = table.concat(texts, ',')
        end
      end
    end
    for i = 1, n do
      local l = L[i]
      if l then
        set[#set + 1] = 'lq' .. i
        set[#set + 1] = string.format('%.17g', l.limit)
        set[#set + 1] = 'lw' .. i
        set[#set + 1] = string.format('%.17g', l.window)
        set[#set + 1] = 'ls' .. i
        set[#set + 1] = string.format('%.17g', l.s)
        set[#set + 1] = 'lv' .. i
        set[#set + 1] = string.format('%.17g', l.v)
        if l.rt and l.heard then
          set[#set + 1] = 'lh' .. i
          set[#set + 1] = string.format('%.17g', l.rt)
          set[#set + 1] = 'lt' .. i
          set[#set + 1] = string.format('%.17g', l.heard)
        end
        if l.highs and #l.highs > 0 then
          set[#set + 1] = 'lk' .. i
          set[#set + 1] = numbers(l.highs)
        else gone[#gone + 1] = 'lk' .. i end
        if l.inferred then
          set[#set + 1] = 'li' .. i
          set[#set + 1] = '1'
        else gone[#gone + 1] = 'li' .. i end
        put('lc' .. i, l.counted)
        put('ln' .. i, l.cuts)
        put('lb' .. i, l.busy)
        put('lf' .. i, l.from)
        put('ll' .. i, l.cut_count)
        put('lr' .. i, l.low_run)
      end
    end
    if R then
      local values = {R.perMs, R.ceiling, R.cutAt, R.s, R.v, R.streak, R.refusedAt, R.granted}
      for k = 1, 8 do
        set[#set + 1] = RATE_FIELDS[k]
        set[#set + 1] = string.format('%.17g', values[k])
      end
      set[#set + 1] = 'rq'
      set[#set + 1] = string.format('%.17g', R.probe_at)
      set[#set + 1] = 'rm'
      set[#set + 1] = string.format('%.17g', R.sample)
      set[#set + 1] = 'rt'
      set[#set + 1] = string.format('%.17g', R.rt)
      if R.highs and #R.highs > 0 then
        set[#set + 1] = 'rh'
        set[#set + 1] = numbers(R.highs)
      else gone[#gone + 1] = 'rh' end
      if R.sample_from then
        set[#set + 1] = 'rf'
        set[#set + 1] = string.format('%.17g', R.sample_from)
      else gone[#gone + 1] = 'rf' end
    elseif had_rate then
      redis.call('HDEL', key, 'rp', 'rc', 'rk', 'rs', 'rv', 'rn', 'rr', 'rg', 'rq', 'rm', 'rt', 'rh', 'rf')
    end
    if A then
      set[#set + 1] = 'ac'
      set[#set + 1] = string.format('%.17g', A.count)
      set[#set + 1] = 'aa'
      set[#set + 1] = string.format('%.17g', A.at)
      set[#set + 1] = 'an'
      set[#set + 1] = string.format('%.17g', A.sample)
      set[#set + 1] = 'af'
      set[#set + 1] = string.format('%.17g', A.since)
      if A.from > -math.huge then
        set[#set + 1] = 'ab'
        set[#set + 1] = string.format('%.17g', A.from)
      end
    end
    if trip and trip_at then
      set[#set + 1] = 'kt'
      set[#set + 1] = string.format('%.17g', trip)
      set[#set + 1] = 'kh'
      set[#set + 1] = string.format('%.17g', trip_at)
    end
    if #gone > 0 then redis.call('HDEL', key, unpack(gone)) end
    redis.call('HSET', key, unpack(set))
    redis.call('PEXPIRE', key, math.ceil(rest))
  end
end
return out
`;

/**
 * Take, peek, block, lower, learn, adjust, refused (without a wait, and with one), a round trip
 * told ('k'), reset, and 'n' (nothing: a probe that Redis is back).
 */
export type Operation = 't' | 'p' | 'b' | 'l' | 'a' | 'd' | 'f' | 'w' | 'k' | 'r' | 'n';

/** A cost as the script reads it: a number, or one amount per policy each followed by a comma. */
export function encodeCost(cost: StoreCost): string {
  return typeof cost === 'number' ? String(cost) : cost.map((amount) => `${amount},`).join('');
}

const encoded = new WeakMap<readonly ResolvedPolicy[], readonly string[]>();

/** The script's arguments for `op`; `now` is '' (the server's clock) except in tests. */
export function scriptArgs(
  op: Operation,
  limits: readonly ResolvedPolicy[],
  opArgs: readonly (string | number)[],
  now = '',
): string[] {
  let policies = encoded.get(limits);
  if (policies === undefined) {
    policies = limits.flatMap(({ algorithm, limit, windowMs, capacity }) => [
      algorithm === 'gcra' ? '1' : '0',
      String(limit),
      String(windowMs),
      String(capacity),
    ]);
    encoded.set(limits, policies);
  }
  return [op, now, String(limits.length), ...policies, ...opArgs.map(String)];
}

const REASONS: readonly (DenialReason | undefined)[] = [undefined, 'rate', 'blocked'];

/** The decisions of a take or peek reply (6 integers each). */
export function parseDecisions(reply: unknown): Decision[] {
  if (!Array.isArray(reply) || reply.length % 6 !== 0) {
    throw new TypeError(
      `[fetch-pacer] Unexpected reply from the Redis script: ${JSON.stringify(reply)}`,
    );
  }
  const decisions: Decision[] = [];
  for (let at = 0; at < reply.length; at += 6) {
    const [allowed, remaining, retryAfterMs, resetMs, limit, reason] = reply
      .slice(at, at + 6)
      .map(Number) as [number, number, number, number, number, number];
    const decision = { allowed: allowed === 1, remaining, retryAfterMs, resetMs, limit };
    const why = REASONS[reason];
    decisions.push(why === undefined ? decision : { ...decision, reason: why });
  }
  return decisions;
}
