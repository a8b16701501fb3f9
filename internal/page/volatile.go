package page

import (
	"fmt"
	"html/template"
	"strings"
	"text/template/parse"
)

// A page is the same for every waiter who shares its language, state, mode and room,
// except for a few volatile fields: the numbers that change with every request and
// the CSP nonce. Page renders the rest once and splices these in (see frame.go), which
// is only right while the template does nothing with them but print them. This file
// decides whether that holds for a template, by walking its parse tree after
// html/template has escaped it.

// field is a volatile field of Data.
type field uint8

const (
	fieldPosition field = iota
	fieldWaiting
	fieldActive
	fieldETASeconds
	fieldProgress
	fieldStartsIn
	fieldNonce
	numFields
)

// numIntFields are the volatile fields that are numbers: every field before fieldNonce.
const numIntFields = int(fieldNonce)

var fieldNames = [numFields]string{"Position", "Waiting", "Active", "ETASeconds", "Progress", "StartsInSeconds", "Nonce"}

func fieldNamed(name string) (field, bool) {
	for f, n := range fieldNames {
		if n == name {
			return field(f), true
		}
	}
	return 0, false
}

// intOf is the value of the number field f in d.
func (f field) intOf(d *Data) int {
	switch f {
	case fieldPosition:
		return d.Position
	case fieldWaiting:
		return d.Waiting
	case fieldActive:
		return d.Active
	case fieldETASeconds:
		return d.ETASeconds
	case fieldProgress:
		return d.Progress
	default:
		return d.StartsInSeconds
	}
}

// fieldSet is a set of volatile fields.
type fieldSet uint8

const allFields = fieldSet(1)<<numFields - 1

func (s fieldSet) String() string {
	var names []string
	for f := range numFields {
		if s&(1<<f) != 0 {
			names = append(names, "."+fieldNames[f])
		}
	}
	return strings.Join(names, ", ")
}

// form is how a printed volatile value was made, when a splice can make it again.
type form uint8

const (
	formNone    form = iota
	formRaw          // {{.Position}}, {{.Nonce}}
	formNumber       // {{number .T .Position}}
	formETA          // {{eta .T .ETASeconds}}
	formPercent      // {{percent .Progress}}
	formState        // {{clientState .}}: static JSON around raw numbers
)

// value is what the walk knows about a pipeline's result.
type value struct {
	deps     fieldSet // the volatile fields it is computed from
	root     bool     // it is the page data itself
	t        bool     // it is the page data's T
	form     form
	field    field
	escapers []string // html/template's escapers applied after the form
}

var rootValue = value{deps: allFields, root: true}

// spliceEscapers are the escapers html/template may put after a volatile value in a
// page that is spliced. Each replaces rune by rune (or quotes a string and then
// escapes rune by rune, or pads a number with spaces), so a frame that shows the
// escaper leaves every rune a field can print alone holds for every value. Filters
// (URLs, CSS) decide on a whole value and are not here.
var spliceEscapers = map[string]bool{
	"_html_template_htmlescaper":   true,
	"_html_template_rcdataescaper": true,
	"_html_template_attrescaper":   true,
	"_html_template_jsvalescaper":  true,
}

// checkSplice reports why the escaped template tmpl cannot be spliced, or nil when
// every use of a volatile field is a print a frame can reproduce.
func checkSplice(tmpl *template.Template) error {
	w := &walker{tmpl: tmpl}
	w.template(tmpl, rootValue)
	return w.err
}

// walker follows a template's tree with what it knows about dot and the variables.
type walker struct {
	tmpl   *template.Template
	tree   *parse.Tree
	vars   []variable
	active []string // the templates being walked, to stop at recursion
	err    error
}

type variable struct {
	name string
	val  value
}

// refuse records the first reason the template cannot be spliced.
func (w *walker) refuse(n parse.Node, format string, args ...any) {
	if w.err != nil {
		return
	}
	loc, _ := w.tree.ErrorContext(n)
	w.err = fmt.Errorf("%s: %s", loc, fmt.Sprintf(format, args...))
}

func (w *walker) template(t *template.Template, dot value) {
	if t.Tree == nil || t.Tree.Root == nil {
		return // declared, never defined: executing it fails the same for every waiter
	}
	for _, name := range w.active {
		if name == t.Name() {
			w.refuse(t.Tree.Root, "template %q calls itself", name)
			return
		}
	}
	outerTree, outerVars := w.tree, w.vars
	w.tree, w.vars = t.Tree, []variable{{"$", dot}}
	w.active = append(w.active, t.Name())
	w.list(t.Tree.Root, dot)
	w.active = w.active[:len(w.active)-1]
	w.tree, w.vars = outerTree, outerVars
}

func (w *walker) list(l *parse.ListNode, dot value) {
	if l == nil {
		return
	}
	for _, n := range l.Nodes {
		w.node(n, dot)
	}
}

func (w *walker) node(n parse.Node, dot value) {
	switch n := n.(type) {
	case *parse.ActionNode:
		v := w.pipe(n.Pipe, dot, false)
		if len(n.Pipe.Decl) == 0 {
			w.print(n, v)
		}
	case *parse.IfNode:
		w.branch(&n.BranchNode, dot, false)
	case *parse.WithNode:
		w.branch(&n.BranchNode, dot, true)
	case *parse.RangeNode:
		w.branch(&n.BranchNode, dot, true)
	case *parse.TemplateNode:
		arg := value{}
		if n.Pipe != nil {
			arg = w.pipe(n.Pipe, dot, false)
		}
		called := w.tmpl.Lookup(n.Name)
		if called == nil {
			// html/template renamed the call to a copy escaped for another context,
			// which only text/template can see; it may print the field any way.
			if arg.deps != 0 {
				w.refuse(n, "passes %s to template %q outside HTML text", arg.deps, n.Name)
			}
			return
		}
		w.template(called, arg)
	case *parse.ListNode:
		w.list(n, dot)
	}
}

// branch walks if, with and range. The condition decides what the page shows, so it
// must not depend on a volatile field.
func (w *walker) branch(b *parse.BranchNode, dot value, dotIsCondition bool) {
	mark := len(w.vars)
	isRange := b.Type() == parse.NodeRange
	v := w.pipe(b.Pipe, dot, isRange)
	// A struct is always true, so {{with $}} decides nothing.
	if v.deps != 0 && !(v.root && !isRange) {
		w.refuse(b, "decides on %s", v.deps)
	}
	body := dot
	if dotIsCondition {
		body = v
		if isRange {
			body = value{deps: v.deps} // an element of it
		}
	}
	declared := len(w.vars) // the condition's variables last until {{end}}
	w.list(b.List, body)
	w.vars = w.vars[:declared]
	w.list(b.ElseList, dot)
	w.vars = w.vars[:mark]
}

// print checks a printed value: static, or a volatile one in a form and a context a
// frame reproduces.
func (w *walker) print(n parse.Node, v value) {
	if v.deps == 0 {
		return
	}
	if v.root {
		w.refuse(n, "prints the whole page data")
		return
	}
	if v.form == formNone {
		w.refuse(n, "prints %s other than as {{.Field}}, number, eta, percent or clientState", v.deps)
		return
	}
	if len(v.escapers) != 1 || !spliceEscapers[v.escapers[0]] && !nospaceNumber(v) {
		w.refuse(n, "prints %s where html/template escapes it with %v", v.deps, v.escapers)
	}
}

// nospaceNumber reports whether v is a number in an unquoted attribute
// (value={{.Progress}}). That escaper replaces rune by rune too, but turns an empty
// value into "ZgotmplZ"; a number is never empty.
func nospaceNumber(v value) bool {
	number := v.form == formPercent || v.form == formNumber || v.form == formRaw && v.field != fieldNonce
	return number && v.escapers[0] == "_html_template_nospaceescaper"
}

// pipe evaluates a pipeline, binding its variables (to the elements of the value when
// the pipeline is a range's).
func (w *walker) pipe(p *parse.PipeNode, dot value, isRange bool) value {
	if p == nil {
		return value{}
	}
	var v value
	for i, c := range p.Cmds {
		var piped *value
		if i > 0 {
			piped = &v
		}
		v = w.command(c, dot, piped)
	}
	for _, d := range p.Decl {
		if p.IsAssign {
			// An assignment may be read before it in the next turn of a range; keep
			// to values every turn agrees on.
			if v.deps != 0 {
				w.refuse(p, "assigns %s to %s", v.deps, d.Ident[0])
			}
			continue
		}
		bound := v
		if isRange {
			bound = value{deps: v.deps} // an index or an element
		}
		w.vars = append(w.vars, variable{d.Ident[0], bound})
	}
	return v
}

func (w *walker) command(c *parse.CommandNode, dot value, piped *value) value {
	if id, ok := c.Args[0].(*parse.IdentifierNode); ok {
		args := make([]value, 0, len(c.Args))
		for _, a := range c.Args[1:] {
			args = append(args, w.arg(a, dot))
		}
		if piped != nil {
			args = append(args, *piped)
		}
		return call(id.Ident, args)
	}
	v := w.arg(c.Args[0], dot)
	if len(c.Args) == 1 && piped == nil {
		return v
	}
	// A method call with arguments, or a value a pipe ends in: whatever it makes
	// depends on everything it was given.
	deps := v.deps
	for _, a := range c.Args[1:] {
		deps |= w.arg(a, dot).deps
	}
	if piped != nil {
		deps |= piped.deps
	}
	return value{deps: deps}
}

func (w *walker) arg(n parse.Node, dot value) value {
	switch n := n.(type) {
	case *parse.DotNode:
		return dot
	case *parse.FieldNode:
		return fields(dot, n.Ident)
	case *parse.VariableNode:
		return fields(w.lookup(n.Ident[0]), n.Ident[1:])
	case *parse.ChainNode:
		return fields(w.arg(n.Node, dot), n.Field)
	case *parse.PipeNode:
		mark := len(w.vars)
		v := w.pipe(n, dot, false)
		w.vars = w.vars[:mark] // a parenthesized pipeline's variables end with it
		return v
	case *parse.IdentifierNode:
		return call(n.Ident, nil)
	}
	return value{} // a literal
}

func (w *walker) lookup(name string) value {
	for i := len(w.vars) - 1; i >= 0; i-- {
		if w.vars[i].name == name {
			return w.vars[i].val
		}
	}
	return rootValue // undefined: parse refuses it; be careful anyway
}

// fields follows .A.B from v.
func fields(v value, names []string) value {
	for i, name := range names {
		if !v.root {
			return value{deps: v.deps} // a field of a field: no longer a form
		}
		if f, ok := fieldNamed(name); ok {
			v = value{deps: 1 << f, form: formRaw, field: f}
		} else {
			v = value{t: name == "T" && i == len(names)-1}
		}
	}
	return v
}

// call is what function name makes of args. The forms are the calls a frame can
// repeat; anything else taints its result with every volatile field it was given.
func call(name string, args []value) value {
	var deps fieldSet
	for _, a := range args {
		deps |= a.deps
	}
	raw := func(a value) bool { return a.form == formRaw && a.field != fieldNonce && len(a.escapers) == 0 }
	switch {
	case name == "number" && len(args) == 2 && args[0].t && raw(args[1]):
		return value{deps: deps, form: formNumber, field: args[1].field}
	case name == "eta" && len(args) == 2 && args[0].t && raw(args[1]):
		return value{deps: deps, form: formETA, field: args[1].field}
	case name == "percent" && len(args) == 1 && raw(args[0]):
		return value{deps: deps, form: formPercent, field: args[0].field}
	case name == "clientState" && len(args) == 1 && args[0].root:
		return value{deps: deps, form: formState}
	case strings.HasPrefix(name, "_html_template_") && len(args) == 1 && args[0].form != formNone:
		v := args[0]
		v.escapers = append(v.escapers[:len(v.escapers):len(v.escapers)], name)
		return v
	}
	return value{deps: deps}
}
