package waitingroom

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
)

// What the next handler returns counts as the shop's failure unless it is an answer:
// an error carrying a status under 500 (a file server's 404, a 403).
func TestShopFailed(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{errors.New("dial tcp: connection refused"), true},
		{caddyhttp.Error(http.StatusBadGateway, errors.New("upstream down")), true},
		{caddyhttp.Error(http.StatusServiceUnavailable, nil), true},
		{caddyhttp.Error(http.StatusNotFound, errors.New("no such file")), false},
		{caddyhttp.Error(http.StatusForbidden, nil), false},
		{fmt.Errorf("wrapped: %w", caddyhttp.Error(http.StatusNotFound, nil)), false},
		{caddyhttp.HandlerError{Err: errors.New("no status")}, true},
		{context.Canceled, true}, // the visitor going away is left out before this is asked
	} {
		if got := shopFailed(tc.err); got != tc.want {
			t.Errorf("shopFailed(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
