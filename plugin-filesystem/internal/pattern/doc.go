// Package pattern holds the matching rules of the filesystem plugin's text actions:
// shell-style globs for entry names, the nested-quantifier guard, regular expressions
// with ECMAScript-flavoured meaning on top of Go's RE2 engine, a lazy DFA that answers
// "is there a match" with Go's semantics at a few lookups per byte, ECMAScript
// replacement templates, literal replacement, and a streaming line searcher.
//
// Everything here is pure: no file is opened and nothing is written. The behaviour
// users see is described in docs/filesystem.md.
package pattern
