package redisstore

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
)

func init() {
	// go-redis logs every failed dial on its own, straight to stderr: during an outage
	// at thousands of requests per second that is thousands of lines per second. Route
	// its lines through Caddy's log, at most one per quietPeriod, with a count of the
	// rest. (The setting is process-wide; inside Caddy only Redis clients share it.)
	redis.SetLogger(&quietLogger{period: quietPeriod})
}

// quietPeriod is the least time between two go-redis log lines.
const quietPeriod = 10 * time.Second

type quietLogger struct {
	mu         sync.Mutex
	period     time.Duration
	last       time.Time
	suppressed int
	// emit writes a line; nil means Caddy's log.
	emit func(msg string, suppressed int)
}

func (l *quietLogger) Printf(_ context.Context, format string, v ...any) {
	l.mu.Lock()
	now := time.Now()
	if !l.last.IsZero() && now.Sub(l.last) < l.period {
		l.suppressed++
		l.mu.Unlock()
		return
	}
	suppressed := l.suppressed
	l.last, l.suppressed = now, 0
	emit := l.emit
	l.mu.Unlock()

	msg := fmt.Sprintf(format, v...)
	if emit != nil {
		emit(msg, suppressed)
		return
	}
	caddy.Log().Named("waiting_room.redis").Warn(msg, zap.Int("similar_lines_suppressed", suppressed))
}
