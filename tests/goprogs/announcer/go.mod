module example.com/announcer

go 1.19

require github.com/livetrace/livetrace/go_helper v0.0.0

replace github.com/livetrace/livetrace/go_helper => ../../../go_helper
