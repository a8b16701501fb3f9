package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
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
	// The clients stand for visitors on other machines, and there they would not take
	// a core from the servers they measure. Here they share two, so they run at a
	// lower priority and take what the servers leave: what they measure is dated by the
	// kernel (receiveTime), so their own lateness does not count against the room, as
	// long as they read each message before the next to the same socket arrives (else
	// the kernel dates both by the later: heldWaiter.together counts those).
	cmd := exec.Command("nice", append([]string{"-n", "10", self, clientCommand, mode}, args...)...)
	// A client process does its work in one loop (epoll_linux.go). With the runtime's
	// default of a thread per core, six of them beside six Caddy processes on two cores
	// spent a quarter of their CPU in the scheduler, waking idle threads to find
	// nothing to do.
	cmd.Env = append(os.Environ(), "GOMAXPROCS=1")
	return cmd, nil
}

// A steeredClient is a client process the harness drives step by step: one command a
// line on its stdin, one JSON answer per command on its stdout. A section that must
// measure between phases (connect, then hold, then report) steers its clients so; the
// client exits when its stdin closes, so a harness that dies takes its clients along.
type steeredClient struct {
	*proc
	in  io.WriteCloser
	out *json.Decoder
}

func (r *rig) startSteeredClient(name, mode string, args ...string) (*steeredClient, error) {
	cmd, err := clientCmd(mode, args...)
	if err != nil {
		return nil, err
	}
	// Our own pipe rather than StdoutPipe: exec closes that one as soon as the process
	// exits, possibly before its last answer is read.
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd.Stdout = outW
	in, err := cmd.StdinPipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return nil, err
	}
	p, err := r.launch(name, cmd)
	outW.Close() // the child has its copy
	if err != nil {
		outR.Close()
		return nil, err
	}
	return &steeredClient{proc: p, in: in, out: json.NewDecoder(outR)}, nil
}

// ask sends one command and decodes the answer into answer.
func (c *steeredClient) ask(command string, answer any) error {
	if _, err := fmt.Fprintln(c.in, command); err != nil {
		return fmt.Errorf("%s: %q: %v\n%s", c.name, command, err, c.log())
	}
	if err := c.out.Decode(answer); err != nil {
		return fmt.Errorf("%s: answer to %q: %v\n%s", c.name, command, err, c.log())
	}
	return nil
}

// steerCommands reads a steered client's commands from stdin and writes each answer as
// one JSON line on stdout, until stdin closes.
func steerCommands(handle func(command string) (any, error)) int {
	in := bufio.NewScanner(os.Stdin)
	out := json.NewEncoder(os.Stdout)
	for in.Scan() {
		answer, err := handle(in.Text())
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		if err := out.Encode(answer); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	return 0
}
