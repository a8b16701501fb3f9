package redisstore

// go-redis's own log lines (a failed dial, a Sentinel switch) are left to go-redis's
// default logger, on stderr. go-redis v9.23.0 has one logger for the whole process,
// set with redis.SetLogger; no client, Options or UniversalOptions field takes one.
// Setting it here would take it from every other Redis client in the binary (another
// plugin's, with its own wishes), so the store sets nothing.
//
// Nothing is lost by that. Every failed store call reaches Caddy's log through the
// room's logger, at most one line per 10 s with a count of the rest (the waiting room's
// "waiting room store unavailable", which carries go-redis's error). And go-redis's own
// lines stay few during an outage: once pool_size dials in a row have failed, callers
// get the last dial error without dialing, and one background goroutine redials once a
// second without logging. So an outage, however long and however busy, prints at most
// 2*pool_size-1 lines per Redis node: 39 with the default pool of 10 per CPU on 2 CPUs,
// 7 with pool_size 4, after 2 s as after 6 s of 50 callers.
// TestOutageGoRedisLinesFew pins that.
