module harness.local/pause

go 1.22
