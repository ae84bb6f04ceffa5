package faultfs

// Stats counts what the file system was asked to do.
type Stats struct {
	Writes        int // write requests that succeeded
	Syncs         int // fsyncs and fdatasyncs of files that succeeded
	DirSyncs      int // fsyncs of the directory that succeeded
	FailedSyncs   int // fsyncs failed by FailSync
	NoSpaceWrites int // writes failed by NoSpace
	PowerLosses   int
	LostFiles     int // names that PowerLoss undid (files vanished or came back)
	LostBytes     int // live bytes that differed from durable ones at PowerLoss
}

// Sector is the unit in which TornPowerLoss keeps or drops unsynced writes.
const Sector = 512
