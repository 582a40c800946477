module github.com/livetrace/livetrace/go_helper

go 1.19
