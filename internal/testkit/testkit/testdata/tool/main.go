// Command tool is a program for the tests of Binaries to build.
package main

func main() {}
