module example.com/poolgens

go 1.19
