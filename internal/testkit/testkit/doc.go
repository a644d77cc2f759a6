// Package testkit holds the helpers that the project's tests share: a
// context bounded against a hang, a buffer that a process writes while the
// test reads it, the binaries built once per test process, and a wait on a
// condition in place of a sleep. It is test support: no binary links it.
package testkit
