// Package archtest holds the tests of cwm's package map, run with every
// other test: every package is documented and named in
// docs/architecture.md, no stage imports the environment builder, and no
// package but the sandbox's and the environment store's turns a layer's
// host directory into a sandbox. It has no code of its own.
package archtest
