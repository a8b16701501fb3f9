package page

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"sort"
	"strings"

	"golang.org/x/text/language"

	"github.com/caddy-waitingroom/caddy-waitingroom/assets"
)

// defaultLang is the language every other one falls back to. Its file is the
// reference: a key missing there is missing everywhere.
const defaultLang = "en"

// catalog holds one flat key -> text map per language tag, read once from
// i18n/<tag>.json. Adding a language is adding one such file.
var catalog, languages = loadCatalog(assets.Files)

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

// maxLanguageRanges bounds the ranges read from one header, for the same reason:
// x/text allocates for each, and a browser sends a handful.
const maxLanguageRanges = 32

// maxLanguageRange bounds one range ("zh-Hant-TW;q=0.8"): x/text copies what it parses,
// so a longer item would cost in proportion to its length. Real tags are far shorter.
const maxLanguageRange = 64

// matcher chooses among the catalog's languages, the default first: it is what a
// header matching none of them gets.
var matcher = newMatcher(languages)

type langMatcher struct {
	m     language.Matcher
	names []string // names[i] is the catalog tag of the matcher's i-th tag
}

// newMatcher matches among langs. x/text keeps Traditional and Simplified Chinese
// apart, so while the catalog has only "zh" (Simplified), zh-Hant is matched to it
// as well: a reader of Traditional characters reads it far more easily than the
// English fallback. A zh-Hant catalog, once there is one, takes those ranges.
func newMatcher(langs []string) langMatcher {
	names := append([]string{defaultLang}, slices.DeleteFunc(slices.Clone(langs), func(l string) bool { return l == defaultLang })...)
	if slices.Contains(names, "zh") && !slices.ContainsFunc(names, func(l string) bool { return strings.EqualFold(l, "zh-hant") }) {
		names = append(names, "zh-Hant")
	}
	tags := make([]language.Tag, len(names))
	for i, name := range names {
		tags[i] = language.Make(name)
		if name == "zh-Hant" {
			names[i] = "zh"
		}
	}
	return langMatcher{m: language.NewMatcher(tags), names: names}
}

// Negotiate picks the supported language a visitor prefers most from an
// Accept-Language header (RFC 9110 section 12.5.4), with golang.org/x/text/language:
// q-values are honoured, a regional tag matches its language ("ko-KR" -> "ko"), and
// an item x/text cannot read, or with a weight outside 0..1, is passed over rather
// than spoiling the rest. No match at all means English.
func Negotiate(acceptLanguage string) string {
	return matcher.negotiate(acceptLanguage)
}

func (lm langMatcher) negotiate(acceptLanguage string) string {
	if len(acceptLanguage) > maxAcceptLanguage {
		acceptLanguage = acceptLanguage[:maxAcceptLanguage]
	}
	type pref struct {
		tag language.Tag
		q   float32
	}
	var onStack [maxLanguageRanges]pref
	prefs := onStack[:0]
	// Item by item: x/text refuses a whole header for one item it cannot parse.
	read := 0
	for item := range strings.SplitSeq(acceptLanguage, ",") {
		if read++; read > maxLanguageRanges {
			break
		}
		if strings.TrimSpace(item) == "" || len(item) > maxLanguageRange {
			continue // empty (x/text's error would allocate, for nothing) or no real tag
		}
		tags, qs, err := language.ParseAcceptLanguage(item)
		if err != nil || len(tags) != 1 || !(qs[0] > 0 && qs[0] <= 1) {
			continue // unreadable, excluded (q=0), or a weight no RFC allows (NaN, 1.5)
		}
		prefs = append(prefs, pref{tags[0], qs[0]})
	}
	if len(prefs) == 0 {
		return defaultLang
	}
	// Highest weight first, ties in the order given, as ParseAcceptLanguage sorts.
	slices.SortStableFunc(prefs, func(a, b pref) int { return cmp.Compare(b.q, a.q) })
	desired := make([]language.Tag, len(prefs))
	for i, p := range prefs {
		desired[i] = p.tag
	}
	_, i, confidence := lm.m.Match(desired...)
	if confidence == language.No {
		return defaultLang
	}
	return lm.names[i]
}
