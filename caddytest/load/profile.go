package main

import (
	"fmt"
	"os"
	"runtime/pprof"
	"strings"
)

// windowProfile profiles a client process through each measuring window, so what a
// waiter costs its client (the TLS reads, say) can be read beside what it costs Caddy
// (ws-caddy0-cpu.pprof). Window n goes to the path with "-window<n>.pprof" for its
// ".pprof"; without a path it does nothing.
type windowProfile struct {
	path string
	n    int
	file *os.File
}

func (p *windowProfile) start() error {
	if p.path == "" {
		return nil
	}
	if err := p.stop(); err != nil {
		return err
	}
	p.n++
	f, err := os.Create(fmt.Sprintf("%s-window%d.pprof", strings.TrimSuffix(p.path, ".pprof"), p.n))
	if err != nil {
		return err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return err
	}
	p.file = f
	return nil
}

func (p *windowProfile) stop() error {
	if p.file == nil {
		return nil
	}
	pprof.StopCPUProfile()
	err := p.file.Close()
	p.file = nil
	return err
}
