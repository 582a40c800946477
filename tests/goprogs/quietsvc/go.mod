module example.com/quietsvc

go 1.19
