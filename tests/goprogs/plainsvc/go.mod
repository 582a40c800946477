module example.com/plainsvc

go 1.19
