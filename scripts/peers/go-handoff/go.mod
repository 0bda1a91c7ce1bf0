module platoon/peers/go-handoff

go 1.19
