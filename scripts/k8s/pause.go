// The pod sandbox's placeholder process (what registry.k8s.io/pause does): holds the pod's
// namespaces, reaps nothing, exits on SIGINT or SIGTERM. Built locally because this machine has
// no registry to pull the upstream image from.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGINT, syscall.SIGTERM)
	<-c
}
