module example.com/notracesvc

go 1.19
