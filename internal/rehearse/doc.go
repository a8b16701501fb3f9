// Package rehearse plays a sale against the real room before the sale: the same
// decision (room.Room.Decide), admission step (Room.Tick), estimator and memory
// store that Caddy runs, on a simulated clock, much faster than real time. It is
// what `caddy waiting-room rehearse` runs, below the module and free of Caddy: the
// module maps the site's waiting_room onto a room.Config, as Provision does, and
// hands it here with the sale.
//
// One goroutine drives one room. The room is built on a queue.MemoryStore with a
// clock of the rehearsal's own and is never started: the rehearsal is its loop.
// Every 250 ms of the clock it runs the admission step (and at once after a
// departure, as Room.kick does); between steps it plays, in time order, what each
// visitor's browser does, each as the request the module would hand the room:
// the first page load, the waiting socket, the page's request for the site 520 ms
// after the store admits the waiter, a shopper's requests (those that renew its
// session, at their instants), the shop's revoke at checkout, a phone's poll when
// it wakes. A waiter's socket is heard of as the hub hears of it on a memory
// store, by batched heartbeats (hub.go). What each visitor does (its stay, whether
// and when it gives up, sleeps, misses its turn, checks out) is drawn from the
// seed and its number alone, so the settings compared (--compare) play the same
// people, and the same seed plays the same sale: report.json and report.html come
// out the same, byte for byte. The room's draws (`mode random`, an event's
// `shuffle`) take their seeds from the rehearsal's seed too (engine.go), where a
// room takes them from the system's random source.
//
// What is where: command.go the command's run (Command) and its help, site.go the
// room in a site's config, progress.go the terminal's progress bar; sale.go the sale
// (Sale), parse.go and csv.go reading it from flags, a sale file and a CSV of
// arrivals per minute; engine.go the one door into
// internal/room and internal/queue; run.go the rehearsal's loop and what each
// browser does, visitor.go a visitor's traits and record, events.go the events'
// heap and the arrivals, hub.go the waiting sockets; record.go and result.go what
// is counted and the Result; report.go report.json and the terminal's summary,
// html.go report.html, charts.go its charts, svg.go the SVG they are drawn in;
// people.go the sale's visitors as a test against a real Caddy plays them.
//
// The charts are our own SVG, about 220 lines (svg.go): the report must open from
// a file with no network and no script, and be the same bytes for the same seed,
// and no well-kept Go library draws an accessible chart (a title, a description,
// labelled axes, a key) as plain SVG.
//
// A two-hour sale of 500,000 visitors takes about 14 s of one core, a million about
// 30 s (33,000 to 45,000 simulated visitors a second); half of it is the engine's
// own decisions, a fifth the store's heartbeats: go test -run '^$' -bench Rehearse
// -benchtime 1x ./internal/rehearse/.
package rehearse
