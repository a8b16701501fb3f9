package redisstore

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
)

// sampleKey is the room's key for a control period's sample:
// waiting_room:{<room>}:sample:<period>, in the room's hash slot.
func (s *roomStore) sampleKey(period int64) string {
	return strings.TrimSuffix(s.keys[0], "queue") + "sample:" + strconv.FormatInt(period, 10)
}

// failedField is the sample's field that counts failed requests; the others are
// latency buckets by number.
const failedField = "failed"

// sampleKeep is how long Redis keeps a period's sample: many control periods, long
// enough for the period's decision, which comes after it ends, even from a slow
// instance.
const sampleKeep = time.Minute

func (s *roomStore) Report(ctx context.Context, period int64, o queue.Sample) error {
	args := make([]any, 0, 3+2*len(o.Latency))
	args = append(args, int64(0), sampleKeep.Milliseconds()) // the deadline, filled in below
	for i, c := range o.Latency {
		if c > 0 {
			args = append(args, i, c)
		}
	}
	if o.Failed > 0 {
		args = append(args, failedField, o.Failed)
	}
	if len(args) == 2 {
		return nil // nothing measured: nothing to add
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	callerDeadline, _ := ctx.Deadline()
	deadline, err := s.deadline(ctx, callerDeadline)
	if err != nil {
		return fmt.Errorf("reporting measurements: %w", err)
	}
	args[0] = deadline
	err = reportScript.Run(ctx, s.shared.client, []string{s.sampleKey(period)}, args...).Err()
	if isDeadlineReply(err) {
		s.refreshClock()
	} else {
		s.shared.noteError(err)
		err = reportScript.locate(err)
	}
	if err != nil {
		return fmt.Errorf("reporting measurements: %w", err)
	}
	return nil
}

func (s *roomStore) Measured(ctx context.Context, period int64) (queue.Sample, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	fields, err := s.shared.client.HGetAll(ctx, s.sampleKey(period)).Result()
	s.shared.noteError(err)
	if err != nil {
		return queue.Sample{}, fmt.Errorf("reading measurements: %w", err)
	}
	var out queue.Sample
	for f, v := range fields {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return queue.Sample{}, fmt.Errorf("reading measurements: field %q holds %q", f, v)
		}
		if f == failedField {
			out.Failed = n
			continue
		}
		i, err := strconv.Atoi(f)
		if err != nil || i < 0 || i >= queue.LatencyBuckets {
			return queue.Sample{}, fmt.Errorf("reading measurements: unknown field %q", f)
		}
		if out.Latency == nil {
			out.Latency = make([]uint64, queue.LatencyBuckets)
		}
		out.Latency[i] = n
	}
	return out, nil
}
