// Package memorystore is the http.handlers.waiting_room.stores.memory module: the
// embedded store, the default, which keeps a room's line in this Caddy process, across
// reloads (pooled by room name) and across restarts and crashes (in a state file in
// Caddy's data directory, internal/statefile).
package memorystore

import (
	"context"
	"errors"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"go.uber.org/zap"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/statefile"
)

func init() {
	caddy.RegisterModule(MemoryStore{})
}

// MemoryStore is the embedded store, the default: the room's queue and active set live
// in this Caddy process and survive `caddy reload` (the new config takes over the old
// state). They also survive a restart and a crash: the state is saved to a file in
// Caddy's data directory, behind the hot path, every second and at a graceful stop,
// and restored at start with the room's clocks resumed where they stopped
// (docs/caddyfile.md#store). It serves one instance; a fleet of Caddys shares the
// redis store instead.
type MemoryStore struct {
	// File is where the room's state is kept across restarts, or "off" to keep it in
	// memory only (lost with the process, as before state files). Default:
	// `waiting_room/<room>.state` in Caddy's data directory, the one that holds its
	// certificates. A relative path is taken from that directory too.
	File string `json:"file,omitempty"`
	// SaveEvery is how often the state is saved: what a crash can lose at most.
	// Default 1s. A graceful stop saves everything whatever it is.
	SaveEvery caddy.Duration `json:"save_every,omitempty"`
}

// memoryStores pools each room's state by room name across config reloads.
var memoryStores = caddy.NewUsagePool()

// Dir is where state files go by default: waiting_room in Caddy's data directory. The
// handler's tests point it at a directory of their own, or at "" to keep every room
// in memory.
var Dir = func() string { return filepath.Join(caddy.AppDataDir(), "waiting_room") }

const defaultSaveEvery = time.Second

// CaddyModule returns the Caddy module information.
func (MemoryStore) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "http.handlers.waiting_room.stores.memory",
		New: func() caddy.Module { return new(MemoryStore) },
	}
}

// durableMemory is a pooled room's memory store and what keeps it on disk.
type durableMemory struct {
	*queue.MemoryStore
	saver  *statefile.Saver // nil: kept in memory only
	unlock func()
	log    *zap.Logger
	file   string
}

// Destruct saves the state one last time, when the last config with the room is
// gone: at a graceful stop, or when a reload drops the room.
func (d *durableMemory) Destruct() error {
	if d.saver == nil {
		return nil
	}
	if err := d.saver.Stop(); err != nil {
		d.log.Error("waiting room state not saved at stop", zap.String("file", d.file), zap.Error(err))
	}
	d.unlock()
	return nil
}

// OpenStore returns the named room's state: the pooled one, or the one its state
// file holds, or a new one.
func (m MemoryStore) OpenStore(ctx caddy.Context, room string) (queue.Store, func(), error) {
	v, _, err := memoryStores.LoadOrNew(room, func() (caddy.Destructor, error) {
		return m.open(ctx.Logger().With(zap.String("room", room)), room), nil
	})
	if err != nil {
		return nil, nil, err
	}
	var once sync.Once
	release := func() { once.Do(func() { _, _ = memoryStores.Delete(room) }) }
	return v.(*durableMemory).MemoryStore, release, nil
}

// open restores the room from its state file and starts saving it. Nothing here
// fails the config: a file that cannot be trusted is reported and passed over, and a
// directory that cannot be written leaves the room in memory, with a warning.
func (m MemoryStore) open(log *zap.Logger, room string) *durableMemory {
	file := m.stateFile(room)
	d := &durableMemory{MemoryStore: queue.NewMemoryStore(), log: log, file: file}
	if file == "" {
		return d
	}
	unlock, err := statefile.Lock(file)
	if err != nil {
		log.Warn("waiting room state kept in memory only: its file cannot be used", zap.String("file", file), zap.Error(err))
		return d
	}
	start := time.Now()
	draws := drawsFile(file)
	drawsBody, err := statefile.Read(draws)
	if err != nil {
		d.keptAside(draws, err)
	}
	from := statefile.Open(file, func(body []byte) error {
		s, err := queue.LoadMemoryStoreWithDraws(body, drawsBody, room, time.Now())
		if err != nil && drawsBody != nil {
			if s, err = queue.LoadMemoryStore(body, room, time.Now()); err == nil {
				d.keptAside(draws, errors.New("its draws do not hold together with the state"))
			}
		}
		if err == nil {
			d.MemoryStore = s
		}
		return err
	}, func(f string, err error) {
		fields := []zap.Field{zap.String("file", f), zap.Error(err)}
		if bad, mv := statefile.KeepAside(f); mv == nil {
			fields = append(fields, zap.String("kept_as", bad))
		}
		log.Error("waiting room state file not restored", fields...)
	})
	if from != "" {
		st, _ := d.Stats(context.Background())
		log.Info("waiting room state restored", zap.String("file", from), zap.Int("waiting", st.Waiting),
			zap.Int("away", st.Away), zap.Int("active", st.Active), zap.Duration("took", time.Since(start)))
	}
	st := d.MemoryStore
	d.unlock = unlock
	d.saver = statefile.NewSaver(file, cmpDuration(m.SaveEvery, defaultSaveEvery),
		func(dst []byte) []byte { return st.AppendState(dst, room, time.Now()) },
		func(err error) {
			log.Warn("waiting room state not saved: the room goes on in memory, and a restart would lose it",
				zap.String("file", file), zap.Error(err))
		},
		func() { log.Info("waiting room state saved again", zap.String("file", file)) })
	d.saver.Also(draws, func(dst []byte) []byte { return st.AppendDraws(dst, room) })
	// A commitment is on disk before it is shown, and a draw found drawn after a
	// restart is in its line (queue.LoadMemoryStoreWithDraws).
	st.OnDrawSaved(func() { _ = d.saver.Save() })
	d.saver.Start()
	return d
}

// drawsFile is the file of a room's draws, beside its state file (queue.AppendDraws
// says why it is a file of its own).
func drawsFile(state string) string { return strings.TrimSuffix(state, ".state") + ".draws" }

// keptAside reports a draws file that cannot be read, and keeps it aside as a state
// file that cannot be trusted is: the room starts without its draws.
func (d *durableMemory) keptAside(file string, err error) {
	fields := []zap.Field{zap.String("file", file), zap.Error(err)}
	if bad, mv := statefile.KeepAside(file); mv == nil {
		fields = append(fields, zap.String("kept_as", bad))
	}
	d.log.Error("waiting room draws not restored", fields...)
}

// stateFile is the room's state file, "" when kept in memory only.
func (m MemoryStore) stateFile(room string) string {
	switch {
	case m.File == "off":
		return ""
	case m.File == "":
		dir := Dir()
		if dir == "" {
			return ""
		}
		return filepath.Join(dir, fileName(room)+".state")
	case filepath.IsAbs(m.File):
		return m.File
	}
	return filepath.Join(caddy.AppDataDir(), m.File)
}

// fileName is a room name made safe for a file's: escaped as in a URL's path, with
// no leading dot.
func fileName(room string) string {
	s := url.PathEscape(room)
	if strings.HasPrefix(s, ".") {
		s = "%2E" + s[1:]
	}
	return s
}

func cmpDuration(d caddy.Duration, def time.Duration) time.Duration {
	if d > 0 {
		return time.Duration(d)
	}
	return def
}

// Validate checks the settings.
func (m *MemoryStore) Validate() error {
	if m.SaveEvery < 0 {
		return errSaveEvery
	}
	return nil
}

var errSaveEvery = errors.New("save_every must be a positive duration")

// Interface guards
var (
	_ caddy.Validator       = (*MemoryStore)(nil)
	_ caddyfile.Unmarshaler = (*MemoryStore)(nil)
	_ queue.Store           = (*queue.MemoryStore)(nil)
)
