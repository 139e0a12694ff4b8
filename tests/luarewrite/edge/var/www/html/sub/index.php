<?php echo "sub";
