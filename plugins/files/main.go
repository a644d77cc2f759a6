package main

import "github.com/plugkit-go/plugkit/shared/sdk"

func main() { sdk.Serve(newPlugin()) }
