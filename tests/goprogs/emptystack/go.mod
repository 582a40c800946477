module example.com/emptystack

go 1.19
