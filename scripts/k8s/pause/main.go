// The pod sandbox's "pause" process: holds the pod's namespaces open, reaps zombies, and exits on
// SIGINT or SIGTERM. Built statically and packed into a FROM-scratch image by ensure-k8s.sh, because
// no registry is reachable to pull the upstream one.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	signals := make(chan os.Signal, 8)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for sig := range signals {
		if sig != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			pid, err := syscall.Wait4(-1, nil, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}
