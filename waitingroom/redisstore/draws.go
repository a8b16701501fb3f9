package redisstore

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
)

// A room's draws (queue.DrawRecord) and its admissions by reason live beside its
// sixteen keys, in its hash slot:
//
//	draws               HASH  current -> the current draw's id, state -> its state
//	                          (1 open, 2 closed, 3 drawn): what draw_commit.lua reads
//	draw:<id>           HASH  the draw's record: lottery, seed (32 bytes), entry_key (32
//	                          bytes), committed (unix s), public_key, state, close,
//	                          entrants, first, done, and from the close base and lane
//	                          (the busy period's, for the held bitmap below)
//	draw:<id>:held      STRING the held bitmap as the close found it (draw_close.lua
//	                          copies it: one command, 125 KB for a million tickets)
//	draw:<id>:picked    STRING a random draw's picks, 8 bytes a ticket, appended by
//	                          step.lua as it admits them
//	admitted:<hour>     HASH  the admissions of one hour (unix hours): "<minute of the
//	                          hour>:<reason>" -> count, kept a day and an hour
//
// A drawn draw's keys expire after queue.DrawKeep; an open or closed one's do not, so
// a committed seed cannot lapse before its draw. None of them is among reset.lua's: a
// reset empties the line, and the draw keeps its seed. They are written only under a
// fleet that reads queue.FormatLevel 2 (the room commits no draw, and passes
// Limits.Reasons off, otherwise).

// key is the room's key name.
func (s *roomStore) key(name string) string { return strings.TrimSuffix(s.keys[0], "queue") + name }

// drawKey is draw id's record, or with a suffix one of its other keys.
func (s *roomStore) drawKey(idAndSuffix string) string { return s.key("draw:" + idAndSuffix) }

// admissionsKey is the hash of the admissions of the hour of t.
func (s *roomStore) admissionsKey(t time.Time) string {
	return s.key("admitted:" + strconv.FormatInt(t.Unix()/3600, 10))
}

// drawsKeys are the keys of draw_close.lua and draw_place.lua after the room's.
func (s *roomStore) drawsKeys(id string) []string {
	return append(s.keys[:len(s.keys):len(s.keys)], s.key("draws"), s.drawKey(id), s.drawKey(id+":held"),
		s.drawKey(id+":picked"))
}

func (s *roomStore) CommitDraw(ctx context.Context, rec queue.DrawRecord) (queue.DrawRecord, error) {
	keys := []string{s.key("draws"), s.drawKey(rec.ID), s.keys[2]}
	cur, err := s.runKeys(ctx, keys, drawCommitScript, rec.ID, rec.Lottery, rec.Seed[:], rec.EntryKey[:],
		rec.Committed.Unix(), rec.PublicKey).Text()
	if err != nil {
		return queue.DrawRecord{}, fmt.Errorf("committing draw: %w", err)
	}
	got, ok, err := s.Draw(ctx, cur)
	if err == nil && !ok {
		err = fmt.Errorf("draw %q is the room's but has no record", cur)
	}
	if err != nil {
		return queue.DrawRecord{}, fmt.Errorf("committing draw: %w", err)
	}
	return got, nil
}

func (s *roomStore) Draw(ctx context.Context, id string) (queue.DrawRecord, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	if id == "" {
		cur, err := s.shared.client.HGet(ctx, s.key("draws"), "current").Result()
		s.shared.noteError(err)
		switch {
		case errors.Is(err, redis.Nil):
			return queue.DrawRecord{}, false, nil
		case err != nil:
			return queue.DrawRecord{}, false, fmt.Errorf("reading the current draw: %w", err)
		}
		id = cur
	}
	h, err := s.shared.client.HGetAll(ctx, s.drawKey(id)).Result()
	s.shared.noteError(err)
	if err != nil {
		return queue.DrawRecord{}, false, fmt.Errorf("reading draw %q: %w", id, err)
	}
	if len(h) == 0 {
		return queue.DrawRecord{}, false, nil
	}
	rec, err := parseDraw(id, h)
	if err != nil {
		return queue.DrawRecord{}, false, fmt.Errorf("reading draw %q: %w", id, err)
	}
	return rec, true, nil
}

// parseDraw reads a draw's record as draw_commit.lua and the scripts after it write it.
func parseDraw(id string, h map[string]string) (queue.DrawRecord, error) {
	rec := queue.DrawRecord{ID: id, Lottery: h["lottery"], PublicKey: h["public_key"]}
	if len(h["seed"]) != len(rec.Seed) || len(h["entry_key"]) != len(rec.EntryKey) {
		return rec, errors.New("a seed or entry key of the wrong length")
	}
	copy(rec.Seed[:], h["seed"])
	copy(rec.EntryKey[:], h["entry_key"])
	n := map[string]uint64{}
	for _, f := range []string{"committed", "state", "close", "entrants", "first", "done"} {
		v, err := strconv.ParseUint(h[f], 10, 64)
		if err != nil {
			return rec, fmt.Errorf("%s: %w", f, err)
		}
		n[f] = v
	}
	rec.Committed = time.Unix(int64(n["committed"]), 0).UTC()
	rec.State = queue.DrawState(n["state"])
	rec.Close, rec.First = n["close"], n["first"]
	rec.Entrants, rec.Done = int(n["entrants"]), int(n["done"])
	if rec.State < queue.DrawOpen || rec.State > queue.DrawDrawn {
		return rec, fmt.Errorf("state %d", rec.State)
	}
	return rec, nil
}

func (s *roomStore) CloseDraw(ctx context.Context, id string) (queue.DrawRecord, error) {
	if err := s.runKeys(ctx, s.drawsKeys(id), drawCloseScript, int64(queue.DrawKeep/time.Second)).Err(); err != nil {
		return queue.DrawRecord{}, fmt.Errorf("closing draw %q: %w", id, err)
	}
	rec, ok, err := s.Draw(ctx, id)
	if err == nil && !ok {
		err = errors.New("its record is gone")
	}
	if err != nil {
		return queue.DrawRecord{}, fmt.Errorf("closing draw %q: %w", id, err)
	}
	return rec, nil
}

// entrantsChunk is how much of a draw's held bitmap or picks one call reads.
const entrantsChunk = 1 << 20

func (s *roomStore) DrawEntrants(ctx context.Context, id string, dst []uint64) ([]uint64, error) {
	rec, ok, err := s.Draw(ctx, id)
	switch {
	case err != nil:
		return dst, err
	case !ok || rec.State == queue.DrawOpen:
		return dst, fmt.Errorf("entrants of draw %q: not closed", id)
	}
	from := len(dst)
	var base, lane uint64
	var fields []any
	if fields, err = s.hmget(ctx, s.drawKey(id), "base", "lane"); err != nil {
		return dst, fmt.Errorf("entrants of draw %q: %w", id, err)
	}
	base, _ = strconv.ParseUint(fmt.Sprint(fields[0]), 10, 64)
	lane, _ = strconv.ParseUint(fmt.Sprint(fields[1]), 10, 64)
	err = s.readChunks(ctx, s.drawKey(id+":held"), func(at int, b []byte) {
		for i, c := range b {
			for c != 0 {
				j := bits.LeadingZeros8(c) // bit 0 of a Redis bitmap is the most significant
				c &^= 0x80 >> j
				off := uint64(8*(at+i) + j)
				if t := base + off; off >= lane && t <= rec.Close {
					dst = append(dst, t)
				}
			}
		}
	})
	if err == nil {
		var partial []byte
		err = s.readChunks(ctx, s.drawKey(id+":picked"), func(_ int, b []byte) {
			b = append(partial, b...)
			for ; len(b) >= 8; b = b[8:] {
				dst = append(dst, binary.BigEndian.Uint64(b))
			}
			partial = append(partial[:0], b...)
		})
	}
	if err != nil {
		return dst[:from], fmt.Errorf("entrants of draw %q: %w", id, err)
	}
	slices.Sort(dst[from:])
	return append(dst[:from], slices.Compact(dst[from:])...), nil
}

// hmget reads fields of the hash at key.
func (s *roomStore) hmget(ctx context.Context, key string, fields ...string) ([]any, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	v, err := s.shared.client.HMGet(ctx, key, fields...).Result()
	s.shared.noteError(err)
	return v, err
}

// readChunks reads the string at key entrantsChunk bytes a call, each within the
// store's timeout, and hands each chunk to fn with its offset.
func (s *roomStore) readChunks(ctx context.Context, key string, fn func(at int, b []byte)) error {
	for at := 0; ; at += entrantsChunk {
		cctx, cancel := context.WithTimeout(ctx, s.timeout)
		b, err := s.shared.client.GetRange(cctx, key, int64(at), int64(at+entrantsChunk-1)).Bytes()
		cancel()
		s.shared.noteError(err)
		if err != nil && !errors.Is(err, redis.Nil) {
			return err
		}
		fn(at, b)
		if len(b) < entrantsChunk {
			return nil
		}
	}
}

func (s *roomStore) PlaceDraw(ctx context.Context, id string, done int, from []uint64) (queue.DrawRecord, error) {
	args := make([]any, 0, 2+len(from))
	args = append(args, int64(queue.DrawKeep/time.Second), done)
	for _, t := range from {
		args = append(args, t)
	}
	if err := s.runKeys(ctx, s.drawsKeys(id)[:19], drawPlaceScript, args...).Err(); err != nil {
		return queue.DrawRecord{}, fmt.Errorf("placing draw %q: %w", id, err)
	}
	rec, ok, err := s.Draw(ctx, id)
	if err == nil && !ok {
		err = errors.New("its record is gone")
	}
	if err != nil {
		return queue.DrawRecord{}, fmt.Errorf("placing draw %q: %w", id, err)
	}
	return rec, nil
}

func (s *roomStore) Present(ctx context.Context, dst []uint64) ([]uint64, error) {
	res, err := s.run(ctx, presentScript).Slice()
	if err != nil {
		return dst, fmt.Errorf("reading the present waiters: %w", err)
	}
	if len(res) != 4 {
		return dst, fmt.Errorf("reading the present waiters: unexpected reply of %d items", len(res))
	}
	base, _ := res[0].(int64)
	lane, _ := res[1].(int64)
	from, _ := res[2].(int64)
	bitmap, _ := res[3].(string)
	for i := 0; i < len(bitmap); i++ {
		for c := bitmap[i]; c != 0; {
			j := bits.LeadingZeros8(c)
			c &^= 0x80 >> j
			if off := 8*(from+int64(i)) + int64(j); off >= lane {
				dst = append(dst, uint64(base+off))
			}
		}
	}
	return dst, nil
}

func (s *roomStore) Admissions(ctx context.Context, since, now time.Time) ([]queue.Minute, error) {
	from := max(since.Unix()/60, now.Unix()/60-int64(queue.AdmissionsKept/time.Minute))
	to := now.Unix() / 60
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	pipe := s.shared.client.Pipeline()
	var hours []*redis.MapStringStringCmd
	for h := from / 60; h <= to/60; h++ {
		hours = append(hours, pipe.HGetAll(ctx, s.admissionsKey(time.Unix(h*3600, 0))))
	}
	_, err := pipe.Exec(ctx)
	s.shared.noteError(err)
	if err != nil {
		return nil, fmt.Errorf("reading the admissions by reason: %w", err)
	}
	byMinute := map[int64]*queue.ByReason{}
	for i, cmd := range hours {
		hour := from/60 + int64(i)
		for field, v := range cmd.Val() {
			m, r, ok := strings.Cut(field, ":")
			minute, err1 := strconv.ParseInt(m, 10, 64)
			reason, err2 := strconv.Atoi(r)
			n, err3 := strconv.ParseUint(v, 10, 64)
			at := hour*60 + minute
			if !ok || err1 != nil || err2 != nil || err3 != nil || reason < 0 || reason >= int(queue.NumReasons) ||
				minute < 0 || minute >= 60 || at < from || at > to {
				continue
			}
			if byMinute[at] == nil {
				byMinute[at] = new(queue.ByReason)
			}
			byMinute[at][reason] += n
		}
	}
	out := make([]queue.Minute, 0, len(byMinute))
	for at, n := range byMinute {
		out = append(out, queue.Minute{At: time.Unix(at*60, 0).UTC(), ByReason: *n})
	}
	slices.SortFunc(out, func(a, b queue.Minute) int { return a.At.Compare(b.At) })
	return out, nil
}
