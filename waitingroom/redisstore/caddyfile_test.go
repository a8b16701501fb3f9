package redisstore

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

func TestUnmarshalCaddyfile(t *testing.T) {
	tests := []struct {
		input   string
		want    Redis
		wantErr string
	}{
		{input: `redis`, want: Redis{}},
		{input: `redis redis://127.0.0.1:6380/2`, want: Redis{URL: "redis://127.0.0.1:6380/2"}},
		{
			input: `redis rediss://cache:6379 {
				username     caddy
				password     {env.REDIS_PASSWORD}
				db           3
				tls
				prefix       shop:
				dial_timeout 2s
				timeout      500ms
				pool_size    20
				join_wait    5ms
			}`,
			want: Redis{
				URL: "rediss://cache:6379", Username: "caddy", Password: "{env.REDIS_PASSWORD}",
				DB: 3, TLS: true, Prefix: "shop:", DialTimeout: caddy.Duration(2 * time.Second),
				Timeout: caddy.Duration(500 * time.Millisecond), PoolSize: 20, JoinWait: caddy.Duration(5 * time.Millisecond),
			},
		},
		{
			input: `redis {
				addresses 10.0.0.1:7000 10.0.0.2:7000 10.0.0.3:7000
			}`,
			want: Redis{Addresses: []string{"10.0.0.1:7000", "10.0.0.2:7000", "10.0.0.3:7000"}},
		},
		{
			input: `redis {
				sentinel mymaster 10.0.0.1:26379 10.0.0.2:26379
			}`,
			want: Redis{MasterName: "mymaster", Addresses: []string{"10.0.0.1:26379", "10.0.0.2:26379"}},
		},
		{input: `redis redis://a redis://b`, wantErr: "wrong argument count"},
		{input: "redis {\n db 1\n db 2\n}", wantErr: "duplicate db"},
		{input: "redis {\n db -1\n}", wantErr: "db must be a whole number"},
		{input: "redis {\n pool_size many\n}", wantErr: "pool_size must be a whole number"},
		{input: "redis {\n timeout soon\n}", wantErr: "timeout must be a positive duration"},
		{input: "redis {\n dial_timeout 0s\n}", wantErr: "dial_timeout must be a positive duration"},
		{input: "redis {\n join_wait -1s\n}", wantErr: "join_wait must be a duration >= 0"},
		{input: "redis {\n join_wait\n}", wantErr: "wrong argument count"},
		{input: "redis {\n tls yes\n}", wantErr: "wrong argument count"},
		{input: "redis {\n password\n}", wantErr: "wrong argument count"},
		{input: "redis {\n addresses\n}", wantErr: "wrong argument count"},
		{input: "redis {\n sentinel mymaster\n}", wantErr: "sentinel needs the master name and at least one"},
		{input: "redis {\n cluster yes\n}", wantErr: `unrecognized subdirective "cluster"`},
		{
			input:   "redis {\n addresses a:1 b:2\n sentinel m c:3\n}",
			wantErr: "addresses and sentinel are exclusive",
		},
	}
	for _, tc := range tests {
		var got Redis
		err := got.UnmarshalCaddyfile(caddyfile.NewTestDispenser(tc.input))
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s\nerror = %v, want one containing %q", tc.input, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s\nunexpected error: %v", tc.input, err)
			continue
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s\ngot  %+v\nwant %+v", tc.input, got, tc.want)
		}
	}
}

func TestProvision(t *testing.T) {
	t.Setenv("WR_TEST_REDIS_PASSWORD", "s3cret")
	t.Setenv("WR_TEST_REDIS_URL", "redis://u:fromurl@cache:6380/4")
	tests := []struct {
		name    string
		config  Redis
		want    settings
		wantErr string
	}{
		{
			name:   "defaults",
			config: Redis{},
			want:   settings{addrs: DefaultAddress, timeout: time.Second, dialTimeout: time.Second},
		},
		{
			name:   "url from env, password overridden from env",
			config: Redis{URL: "{env.WR_TEST_REDIS_URL}", Password: "{env.WR_TEST_REDIS_PASSWORD}"},
			want: settings{addrs: "cache:6380", username: "u", password: "s3cret", db: 4,
				timeout: time.Second, dialTimeout: time.Second},
		},
		{
			name:   "rediss means tls",
			config: Redis{URL: "rediss://cache:6379", Timeout: caddy.Duration(time.Minute)},
			want:   settings{addrs: "cache:6379", tls: true, timeout: time.Minute, dialTimeout: time.Second},
		},
		{
			name:   "cluster",
			config: Redis{URL: "redis://a:1", Addresses: []string{"b:2", "c:3"}},
			want:   settings{addrs: "a:1,b:2,c:3", timeout: time.Second, dialTimeout: time.Second},
		},
		{name: "bad url", config: Redis{URL: "http://x"}, wantErr: "parsing url"},
		{name: "db with cluster", config: Redis{Addresses: []string{"a:1", "b:2"}, DB: 1}, wantErr: "db must be 0 with Redis Cluster"},
		{name: "braces in prefix", config: Redis{Prefix: "wr{x}:"}, wantErr: "must not contain braces"},
		{name: "join_wait past the default timeout", config: Redis{JoinWait: caddy.Duration(time.Second)}, wantErr: "join_wait 1s must be shorter than timeout 1s"},
		{name: "join_wait past timeout", config: Redis{Timeout: caddy.Duration(10 * time.Millisecond), JoinWait: caddy.Duration(20 * time.Millisecond)}, wantErr: "join_wait 20ms must be shorter than timeout 10ms"},
		{name: "sentinel without addresses", config: Redis{MasterName: "m"}, wantErr: "sentinel needs the addresses"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
			defer cancel()
			r := tc.config
			err := r.Provision(ctx)
			if err == nil {
				err = r.Validate()
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tc.wantErr)
				}
				if strings.Contains(err.Error(), "s3cret") || strings.Contains(err.Error(), "fromurl") {
					t.Fatalf("error %q shows a password", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if r.settings != tc.want {
				t.Fatalf("settings = %+v, want %+v", r.settings, tc.want)
			}
		})
	}
}

// What Provision and Validate would refuse is refused where the Caddyfile says it,
// with the line: an address that is not a Redis URL, and a join_wait as long as the
// timeout. A URL from a placeholder is checked once it is expanded, at provision.
func TestCaddyfileRefusesWithTheLine(t *testing.T) {
	for _, tc := range []struct {
		input   string
		line    int
		wantErr string
	}{
		{"redis cache:6379", 1, "url: not a redis:// or rediss:// URL of a host:port"},
		{"redis http://cache:6379", 1, "url: not a redis:// or rediss:// URL"},
		{"redis unix:///run/redis.sock", 1, "url: unix sockets are not supported"},
		{"redis {\n timeout 50ms\n join_wait 50ms\n}", 3, "join_wait 50ms must be shorter than timeout 50ms"},
		{"redis {\n join_wait 2s\n}", 2, "join_wait 2s must be shorter than timeout 1s"},
		{"redis {\n join_wait 200ms\n timeout 100ms\n}", 3, "join_wait 200ms must be shorter than timeout 100ms"},
	} {
		var r Redis
		err := r.UnmarshalCaddyfile(caddyfile.NewTestDispenser(tc.input))
		if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.HasSuffix(err.Error(), fmt.Sprintf(", at Testfile:%d", tc.line)) {
			t.Errorf("%q: %v, want %q at line %d", tc.input, err, tc.wantErr, tc.line)
		}
	}
	for _, ok := range []string{"redis redis://cache:6379", "redis rediss://u:p@cache:6380/2", "redis {env.REDIS_URL}", "redis {\n join_wait 20ms\n}"} {
		var r Redis
		if err := r.UnmarshalCaddyfile(caddyfile.NewTestDispenser(ok)); err != nil {
			t.Errorf("%q refused: %v", ok, err)
		}
	}
}
