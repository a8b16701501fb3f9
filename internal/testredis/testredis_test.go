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
