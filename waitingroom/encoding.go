package waitingroom

import "strings"

// acceptsGzip reports whether a request's Accept-Encoding lines let the waiting page go
// out gzipped (RFC 9110, section 12.5.3): gzip (or x-gzip), or "*" when gzip is not
// named, with a weight above 0 and no lower than identity's, where the client gave
// identity one (by name or by "*"); a tie goes to gzip, the smaller page. No header
// at all means identity: the RFC would allow any coding, but a client that names none
// is a script or a probe, not a browser, and may well not inflate it.
func acceptsGzip(lines []string) bool {
	gzip, identity, star := -1, -1, -1 // -1: not named
	for _, line := range lines {
		for item := range strings.SplitSeq(line, ",") {
			coding, params, _ := strings.Cut(item, ";")
			q, ok := weight(params)
			if !ok {
				continue
			}
			switch coding = strings.TrimSpace(coding); {
			case strings.EqualFold(coding, "gzip"), strings.EqualFold(coding, "x-gzip"):
				gzip = max(gzip, q)
			case strings.EqualFold(coding, "identity"):
				identity = max(identity, q)
			case coding == "*":
				star = max(star, q)
			}
		}
	}
	if gzip < 0 {
		gzip = star
	}
	if identity < 0 {
		identity = star
	}
	return gzip > 0 && gzip >= identity
}

// weight reads the q parameter of an Accept-Encoding item, in thousandths; no q means
// 1000. A weight not written as RFC 9110 writes it makes the item unreadable, and it is
// skipped.
func weight(params string) (int, bool) {
	for param := range strings.SplitSeq(params, ";") {
		key, val, _ := strings.Cut(param, "=")
		if strings.EqualFold(strings.TrimSpace(key), "q") {
			return qvalue(strings.TrimSpace(val))
		}
	}
	return 1000, true
}

// qvalue reads "0", "0.5", "1.000" and the like, by hand: strconv.ParseFloat allocates
// an error for every malformed weight, and a header may hold thousands.
func qvalue(s string) (int, bool) {
	whole, frac, _ := strings.Cut(s, ".")
	if whole != "0" && whole != "1" || len(frac) > 3 {
		return 0, false
	}
	q, scale := int(whole[0]-'0')*1000, 100
	for i := 0; i < len(frac); i++ {
		c := frac[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		q += int(c-'0') * scale
		scale /= 10
	}
	return q, q <= 1000
}
