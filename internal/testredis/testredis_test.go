package testredis

import (
	"strings"
	"testing"
)

func TestServerStopRestart(t *testing.T) {
	s := Start(t)
	if _, err := s.Do("SET", "k", "v"); err != nil {
		t.Fatal(err)
	}
	s.Stop()
	if _, err := s.Do("PING"); err == nil {
		t.Fatal("PING answered after Stop")
	}
	s.Restart()
	if v, err := s.Do("GET", "k"); err != nil || v != "" {
		t.Fatalf("after restart GET k = %q, %v; want an empty server", v, err)
	}
}

func TestCluster(t *testing.T) {
	c := StartCluster(t)
	info, err := c.Servers[0].Do("CLUSTER", "INFO")
	if err != nil || !strings.Contains(info, "cluster_known_nodes:3") {
		t.Fatalf("cluster info: %v\n%s", err, info)
	}
}

// An AOF server gives back, after a graceful restart on the same port, what it was
// told before; a plain one restarted the same way comes back empty.
func TestServerAOFRestartGraceful(t *testing.T) {
	for _, c := range []struct {
		name  string
		start func(testing.TB) *Server
		want  string
	}{{"aof", StartAOF, "v"}, {"plain", Start, ""}} {
		t.Run(c.name, func(t *testing.T) {
			s := c.start(t)
			if _, err := s.Do("SET", "k", "v"); err != nil {
				t.Fatal(err)
			}
			s.RestartGraceful()
			if v, err := s.Do("GET", "k"); err != nil || v != c.want {
				t.Fatalf("after a graceful restart GET k = %q, %v; want %q", v, err, c.want)
			}
		})
	}
}
