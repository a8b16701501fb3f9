package main

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
)

// Load comes from client processes separate from the harness and from Caddy, as it
// would from the Internet: the harness re-runs its own binary as
// `load client <mode> [flags]`. One process can hold fewer than 20,000 sockets (the
// open-file limit), so the big figures need several.
const clientCommand = "client"

// clientModes are the kinds of client process, registered by the sections that start
// them (init), each parsing its own flags.
var clientModes = map[string]func(args []string) int{}

func clientMain(args []string) int {
	if len(args) == 0 || clientModes[args[0]] == nil {
		names := make([]string, 0, len(clientModes))
		for name := range clientModes {
			names = append(names, name)
		}
		slices.Sort(names)
		fmt.Fprintf(os.Stderr, "usage: load client <%s> [flags]\n", strings.Join(names, "|"))
		return 2
	}
	return clientModes[args[0]](args[1:])
}

// startClient starts a client process of the given mode with its flags.
func (r *rig) startClient(name, mode string, args ...string) (*proc, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	return r.start(name, nil, self, append([]string{clientCommand, mode}, args...)...)
}

// clientCmd is a client process's command for callers that want its output directly
// (exec.Cmd's pipes) rather than in a log file.
func clientCmd(mode string, args ...string) (*exec.Cmd, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	return exec.Command(self, append([]string{clientCommand, mode}, args...)...), nil
}
