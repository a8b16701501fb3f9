package assets

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// defaultLang is the language every other one falls back to. Its file is the
// reference: a key missing there is missing everywhere.
const defaultLang = "en"

// catalog holds one flat key -> text map per language tag, read once from
// i18n/<tag>.json. Adding a language is adding one such file.
var catalog, languages = loadCatalog(files)

func loadCatalog(fsys fs.FS) (map[string]map[string]string, []string) {
	names, err := fs.Glob(fsys, "i18n/*.json")
	if err != nil {
		panic(err)
	}
	cat := make(map[string]map[string]string, len(names))
	langs := make([]string, 0, len(names))
	for _, name := range names {
		data, err := fs.ReadFile(fsys, name)
		if err != nil {
			panic(err)
		}
		var msgs map[string]string
		if err := json.Unmarshal(data, &msgs); err != nil {
			panic(fmt.Sprintf("assets: parsing %s: %v", name, err))
		}
		tag := strings.TrimSuffix(path.Base(name), ".json")
		cat[tag] = msgs
		langs = append(langs, tag)
	}
	if _, ok := cat[defaultLang]; !ok {
		panic("assets: no i18n/" + defaultLang + ".json")
	}
	sort.Strings(langs)
	return cat, langs
}

// Languages returns the supported language tags, sorted.
func Languages() []string {
	return append([]string(nil), languages...)
}

// Supported reports whether tag names a built-in language exactly as Languages
// lists it ("zh", not "zh-CN" or "ZH"), which is what a configured language
// must be: Messages would quietly fall back to English for anything else.
func Supported(tag string) bool {
	_, ok := slices.BinarySearch(languages, tag)
	return ok
}

// Messages returns the page texts for lang; an unknown lang gets English, and a
// key a translation lacks falls back to its English text. The map is the
// caller's own copy.
func Messages(lang string) map[string]string {
	en := catalog[defaultLang]
	msgs := make(map[string]string, len(en))
	for k, v := range en {
		msgs[k] = v
	}
	if lang != defaultLang {
		for k, v := range catalog[lang] {
			msgs[k] = v
		}
	}
	return msgs
}

// shared holds one merged message map per language, built once, for the renders
// Page does itself. Handing a template the same map every time is safe: neither
// a template nor Funcs can write to it. Anyone else gets a copy from Messages.
var shared = func() map[string]map[string]string {
	m := make(map[string]map[string]string, len(languages))
	for _, lang := range languages {
		m[lang] = Messages(lang)
	}
	return m
}()

// sharedMessages is Messages(lang) without the copy; never write to it.
func sharedMessages(lang string) map[string]string {
	if m, ok := shared[lang]; ok {
		return m
	}
	return shared[defaultLang]
}

// maxAcceptLanguage bounds the work one header can cause. Real browsers send
// well under 200 bytes; anything past this is not a person's preference list.
const maxAcceptLanguage = 1024

// Negotiate picks the supported language a visitor prefers most from an
// Accept-Language header (RFC 9110 section 12.5.4): q-values are honoured,
// a regional tag matches its language ("ko-KR" -> "ko"), "*" matches any
// language not named, and ties go to the range listed first. Anything it
// cannot read counts as no preference, which means English.
//
// The one Chinese is Simplified ("zh"). It also answers zh-TW and zh-Hant:
// a reader of Traditional characters reads it far more easily than the
// English fallback. A zh-hant.json would need those ranges sent its way.
func Negotiate(acceptLanguage string) string {
	return negotiate(acceptLanguage, languages)
}

func negotiate(acceptLanguage string, languages []string) string {
	if len(acceptLanguage) > maxAcceptLanguage {
		acceptLanguage = acceptLanguage[:maxAcceptLanguage]
	}
	// For each language: the q of the most specific range that names it (an
	// explicit "ko;q=0" must beat "*"), and where that range stood.
	type pick struct {
		q        float64
		specific bool
		order    int
		set      bool
	}
	// On the stack for the built-in languages: Negotiate runs for every page.
	var onStack [8]pick
	var picks []pick
	if len(languages) <= len(onStack) {
		picks = onStack[:len(languages)]
	} else {
		picks = make([]pick, len(languages))
	}
	rest := acceptLanguage
	for order := 0; rest != ""; order++ {
		var item string
		item, rest, _ = strings.Cut(rest, ",")
		rng, params, _ := strings.Cut(item, ";")
		rng = asciiLower(strings.TrimSpace(rng))
		if rng == "" {
			continue
		}
		q, ok := parseQ(params)
		if !ok {
			continue
		}
		for i, lang := range languages {
			specific := rng == lang || strings.HasPrefix(rng, lang+"-") || strings.HasPrefix(lang, rng+"-")
			if !specific && rng != "*" {
				continue
			}
			p := &picks[i]
			if p.set && (p.specific || !specific) {
				continue // an earlier range of at least the same specificity decided
			}
			*p = pick{q: q, specific: specific, order: order, set: true}
		}
	}
	best, bestQ, bestOrder := defaultLang, 0.0, 0
	for i, p := range picks {
		if !p.set || p.q <= 0 {
			continue
		}
		// Equal weight and place means one "*" named both: keep the default.
		earlier := p.order < bestOrder || (p.order == bestOrder && languages[i] == defaultLang)
		if p.q > bestQ || (p.q == bestQ && earlier) {
			best, bestQ, bestOrder = languages[i], p.q, p.order
		}
	}
	return best
}

// parseQ reads the weight from a range's parameters ("q=0.8"); no q means 1.
// A malformed weight makes the whole range unreadable.
func parseQ(params string) (float64, bool) {
	for params != "" {
		var param string
		param, params, _ = strings.Cut(params, ";")
		key, val, _ := strings.Cut(param, "=")
		if !strings.EqualFold(strings.TrimSpace(key), "q") {
			continue
		}
		q, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
		if err != nil || !(q >= 0 && q <= 1) { // also rejects NaN
			return 0, false
		}
		return q, true
	}
	return 1, true
}

// asciiLower lower-cases A-Z only. Language tags are ASCII (RFC 5646); strings.ToLower
// would turn every invalid byte of a hostile header into a 3-byte U+FFFD, tripling the
// memory one header costs for nothing that could ever match.
func asciiLower(s string) string {
	i := strings.IndexFunc(s, func(r rune) bool { return r >= 'A' && r <= 'Z' })
	if i < 0 {
		return s
	}
	b := []byte(s)
	for j := i; j < len(b); j++ {
		if c := b[j]; c >= 'A' && c <= 'Z' {
			b[j] = c + 'a' - 'A'
		}
	}
	return string(b)
}
