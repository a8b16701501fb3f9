package redisstore

import (
	"embed"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// A room lives in sixteen keys that share one hash tag, so every script touches a single
// Cluster slot:
//
//	queue          ZSET  visitor id -> ticket, present or away (the only per-waiter entry)
//	active         ZSET  visitor id -> last seen, unix ms
//	meta           HASH  ticket (counter), base, epoch, admitted_total, away (count)
//	live           STRING bitmap, bit (ticket-base) set while that ticket's waiter is
//	                     present: queued and heard from within queue_ttl
//	held           STRING bitmap, bit (ticket-base) set while the ticket is queued at
//	                     all, present or away
//	heard          STRING 4 bytes per ticket: last heard, ms since epoch (big endian)
//	heard_buckets  ZSET  bucket (256 tickets) -> a lower bound of its present waiters' heard
//	away_buckets   ZSET  bucket -> a lower bound of its away waiters' heard
//	rate           ZSET  admission number -> admitted at, ms: the admissions inside the
//	                     rate window (at most the rate's count; empty without a rate)
//	holders        STRING 2 bytes per ticket: the instance (its slot, 1..65535) holding
//	                     that waiter's WebSocket, 0 for none
//	leases         HASH  instance slot -> its lease's last renewal, unix ms
//	since          ZSET  visitor id -> admitted at, unix ms: the same members as
//	                     active, so session_max ends sessions by admission (130 bytes
//	                     per admitted visitor, 31 while under 128; nothing per waiter)
//	quiet          STRING bitmap, bit (ticket-base) set from a join until the waiter
//	                     is first heard from (a status, a heartbeat, a hold)
//	arrive         ZSET  visitor id -> admitted at, unix ms: the visitors admitted from
//	                     the queue who have not arrived (no touch yet), for arrive_ttl
//	arrive_tickets HASH  visitor id -> the ticket it was admitted at, for the same
//	                     visitors (both empty while arrive_ttl is off); negated for a
//	                     no-show let in from the place it kept, whose second miss
//	                     loses the place (a release that does not know this reads it
//	                     as a ticket of an older busy period and queues it at the back)
//	missed         STRING bitmap, bit (ticket-base) set while that ticket's waiter is
//	                     a no-show queued again and not let in since
//
// Beside them, in the same hash slot and outside the scripts' common keys: fleet
// (HASH, instance slot -> the format level it reads, fleet.lua: what a release reads
// before it writes a new format; see queue.FormatLevel), the secret, the overrides,
// the once-only keys, the shop's samples, and the draws and admissions by reason
// (draws.go).
//
// base and epoch restart whenever a ticket is issued into an empty queue (no waiter
// present or away), so the bitmaps and heard only span the tickets of the current busy
// period.
//
// Only a waiter heard from since joining goes away: one whose quiet bit is still set at
// queue_ttl (a cookie-less flood's places, a bot that would replay its cookies later)
// is dropped then, so such places are never held for away_ttl and put back ahead of
// the real waiters. A room without the key (a store from before it) keeps everyone away.
//
// A no-show (queue.Limits.ArriveTTL: admitted from the queue, no touch within
// arrive_ttl) gives its slot back in step.lua and is queued again away, heard at that
// moment, in the pass lane (pass.go), so that coming back it goes in first whatever
// the mode. A lane full or closed for the busy period puts it at its old ticket if
// that is of this busy period (ahead of every later ticket), else at the back. That
// turn is kept once: let in from it and missing it again, it loses the place. Only
// status.lua for a page request brings it back: the waiting socket's status,
// heartbeat.lua and hold.lua leave it away (queue.Store.Listen).
//
// An away waiter keeps its ticket: its live bit is clear, so it is in no position, in
// no count of waiting, and never at the head; hearing from it sets the bit again. It
// comes back ahead of every later ticket, which is the "let in first" of a waiter
// whose turn came while away: everyone present ahead of it has been admitted.
//
// A waiter held by an instance (see queue.Holder) counts as heard from at its holder's
// last renewal, and while that lease is fresh (renewed within queue_ttl) its bucket
// does not watch it: the sweep passes over it and leaves it out of the bucket's score,
// and a bucket whose present waiters are all held leaves heard_buckets. Letting a
// waiter go puts its bucket back with ZADD LT, and a lease that lapses makes every
// bucket due at its last renewal, once. So a held waiter costs Redis one look when its
// bucket is first swept and nothing while it waits (renewing each one's heard time
// every queue_ttl would cost an idle million a sweep of the whole line per
// queue_ttl), and an instance's death costs one such sweep.
//
// Why not a second ZSET of waiters by last-heard: a ZSET entry costs ~120 bytes, two
// would break the 200-byte budget per waiter. heard costs 4 bytes per ticket, and the
// buckets let Step find silent waiters without scanning the queue: a bucket's score
// never exceeds the oldest heard time of its waiters of that kind that no fresh lease
// holds (hearing only raises heard, joins, returns, departures and releases lower the
// score with ZADD LT, a sweep sets it exactly, a lapse lowers every bucket to the
// lease's renewal), so every bucket that may hold a silent waiter scores at or below
// the cutoff.

// The scripts are the files of lua/, each with a header that says what its KEYS and
// ARGV are and what it answers. A long script is easier to read, lint and debug in a
// file of its own, and an error Redis reports from one names a line that can be
// opened: Redis numbers the lines of what it was sent, the part of prelude.lua the
// script is given and then its own file, so the store adds the file and line to the
// error (luaScript.locate).
//
// A header names each value on a line of its own: "-- KEYS[i]", "-- KEYS[i..j]",
// "-- ARGV[i]", or "-- ARGV[i+sk]" for the i-th of a group of s values that repeats
// ("i+k" for one). ARGV are numbered as the script reads them, after the deadline
// that prelude.lua takes off; TestScriptCallsMatchHeaders checks every call's counts
// against them.
//
//go:embed lua/*.lua
var luaFiles embed.FS

// The two parts of prelude.lua: the deadline check (deadline.go), which every script
// but time.lua starts with, and then the room's keys and helpers, which only the
// scripts on a room's keys need.
var (
	deadlinePrelude = preludePart(true)
	roomPrelude     = preludePart(false)
)

var (
	joinScript          = newLuaScript("join.lua", roomPrelude)
	passJoinScript      = newLuaScript("pass_join.lua", roomPrelude)
	statusScript        = newLuaScript("status.lua", roomPrelude)
	moveScript          = newLuaScript("move.lua", roomPrelude)
	touchScript         = newLuaScript("touch.lua", roomPrelude)
	heartbeatScript     = newLuaScript("heartbeat.lua", roomPrelude)
	holdScript          = newLuaScript("hold.lua", roomPrelude)
	releaseScript       = newLuaScript("release.lua", roomPrelude)
	leaveScript         = newLuaScript("leave.lua", roomPrelude)
	stepScript          = newLuaScript("step.lua", roomPrelude)
	shuffleScript       = newLuaScript("shuffle.lua", roomPrelude)
	resetScript         = newLuaScript("reset.lua", roomPrelude)
	positionsScript     = newLuaScript("positions.lua", roomPrelude)
	statsScript         = newLuaScript("stats.lua", roomPrelude)
	swapOverridesScript = newLuaScript("swap_overrides.lua", deadlinePrelude)
	onceScript          = newLuaScript("once.lua", deadlinePrelude)
	reportScript        = newLuaScript("report.lua", deadlinePrelude)
	fleetScript         = newLuaScript("fleet.lua", deadlinePrelude)
	drawCommitScript    = newLuaScript("draw_commit.lua", deadlinePrelude)
	drawCloseScript     = newLuaScript("draw_close.lua", roomPrelude)
	drawPlaceScript     = newLuaScript("draw_place.lua", roomPrelude)
	presentScript       = newLuaScript("present.lua", roomPrelude)
	timeScript          = newLuaScript("time.lua", "")
)

// roomKeysLine starts the line of prelude.lua where its room part begins.
const roomKeysLine = "-- The room's keys"

// preludePart is prelude.lua up to the line that starts its room part (deadlineOnly),
// or all of it.
func preludePart(deadlineOnly bool) string {
	src := luaFile("prelude.lua")
	if !deadlineOnly {
		return src
	}
	i := strings.Index(src, "\n"+roomKeysLine)
	if i < 0 {
		panic("redisstore: lua/prelude.lua has no line starting " + strconv.Quote(roomKeysLine))
	}
	return src[:i+1]
}

func luaFile(name string) string {
	b, err := luaFiles.ReadFile("lua/" + name)
	if err != nil {
		panic("redisstore: " + err.Error())
	}
	return string(b)
}

// luaScript is one file of lua/, sent after the part of prelude.lua it needs.
type luaScript struct {
	*redis.Script
	file    string // under lua/
	prelude int    // lines of prelude.lua before the file's first line
}

func newLuaScript(file, prelude string) *luaScript {
	return &luaScript{
		Script:  redis.NewScript(prelude + luaFile(file)),
		file:    file,
		prelude: strings.Count(prelude, "\n"),
	}
}

// sourceLine is the file of lua/ and the line in it of line n of what Redis runs.
func (s *luaScript) sourceLine(n int) (file string, line int) {
	if n <= s.prelude {
		return "prelude.lua", n
	}
	return s.file, n - s.prelude
}

// redisLine finds the line Redis names in a script's error: "... on @user_script:12."
var redisLine = regexp.MustCompile(`@user_script:(\d+)`)

// locate adds to an error reply of the script the file and line it came from, as
// " (lua/step.lua:40)". The error still is the redis.Error it was.
func (s *luaScript) locate(err error) error {
	var rerr redis.Error
	if !errors.As(err, &rerr) {
		return err
	}
	m := redisLine.FindStringSubmatch(rerr.Error())
	if m == nil {
		return err
	}
	n, _ := strconv.Atoi(m[1])
	file, line := s.sourceLine(n)
	return fmt.Errorf("%w (lua/%s:%d)", err, file, line)
}
