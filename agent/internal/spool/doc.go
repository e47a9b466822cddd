// Package spool holds a fleet session's answers on their way to the server: the
// bounded outbox the stream's sender takes them from, and the spool that keeps each
// answer until the server has confirmed it and sends it again after a break.
package spool
