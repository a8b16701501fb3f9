package statefile

import (
	"os"
	"sync"
	"time"
)

// Open reads the state file at path and hands its body to load. A file that is
// missing, damaged, or that load refuses is reported (with the file's name) and
// passed over for the save before it (path.prev), so the room starts from the
// newest save it can trust, or empty: Open reports which file it restored, "" for
// none. Nothing it reads can stop the caller.
func Open(path string, load func(body []byte) error, report func(file string, err error)) string {
	for _, file := range []string{path, path + ".prev"} {
		body, err := Read(file)
		if err == nil && body == nil {
			continue // not there: a first start, or a crash between the renames
		}
		if err == nil {
			err = load(body)
		}
		if err == nil {
			return file
		}
		report(file, err)
	}
	return ""
}

// KeepAside moves a state file that Open reported, one that cannot be trusted, to
// <file>.bad, where the saves that follow leave it: for the operator to look into, or
// to put back for the version that wrote it. Left in place, the next save would
// rotate it over the save before it (<file>.prev), and the one after would be rid
// of it. It returns the name it is kept under.
func KeepAside(file string) (string, error) {
	bad := file + ".bad"
	return bad, os.Rename(file, bad)
}

// A Saver writes a store's state to its file every period, behind the hot path, and
// once more when it stops. A failed save (a full or read-only disk) is reported once
// and retried at the next period; the store goes on in memory meanwhile.
type Saver struct {
	path   string
	every  time.Duration
	state  func(dst []byte) []byte
	failed func(err error) // the first failure of a run of them
	healed func()          // the first success after one

	// alsoPath is a second file, saved after the first, whose body alsoState takes
	// before the first's (Also).
	alsoPath  string
	alsoState func(dst []byte) []byte
	alsoBuf   []byte

	mu      sync.Mutex // one save at a time: the ticker's and Stop's
	buf     []byte
	failing bool
	started bool
	stop    chan struct{}
	done    chan struct{}
}

// NewSaver saves state's body to path every period once started. failed is called
// when saves start failing and healed when they work again; either may be nil.
func NewSaver(path string, every time.Duration, state func(dst []byte) []byte, failed func(error), healed func()) *Saver {
	return &Saver{path: path, every: every, state: state, failed: failed, healed: healed,
		stop: make(chan struct{}), done: make(chan struct{})}
}

// Also has each save write a second file at path after the first, its body taken
// (state) before the first's: a reader of both finds the second never ahead of the
// first. Call it before Start.
func (s *Saver) Also(path string, state func(dst []byte) []byte) {
	s.alsoPath, s.alsoState = path, state
}

// Start begins saving every period.
func (s *Saver) Start() {
	s.started = true
	go func() {
		defer close(s.done)
		t := time.NewTicker(s.every)
		defer t.Stop()
		for {
			select {
			case <-s.stop:
				return
			case <-t.C:
				_ = s.Save()
			}
		}
	}()
}

// Stop ends the periodic saves and saves once more, returning that save's error:
// the graceful stop's save, which loses nothing.
func (s *Saver) Stop() error {
	if s.started {
		select {
		case <-s.stop:
		default:
			close(s.stop)
			<-s.done
		}
	}
	return s.Save()
}

// Save writes the state now.
func (s *Saver) Save() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.alsoState != nil {
		s.alsoBuf = s.alsoState(s.alsoBuf[:0])
	}
	s.buf = s.state(s.buf[:0])
	err := Write(s.path, s.buf)
	if err == nil && s.alsoState != nil {
		err = Write(s.alsoPath, s.alsoBuf)
	}
	switch {
	case err != nil && !s.failing:
		s.failing = true
		if s.failed != nil {
			s.failed(err)
		}
	case err == nil && s.failing:
		s.failing = false
		if s.healed != nil {
			s.healed()
		}
	}
	return err
}
